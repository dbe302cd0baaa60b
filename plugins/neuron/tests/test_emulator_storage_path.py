"""One storage path per process: every caller reaches the implementation install() selected.

The storage bookkeeping has two implementations (the C++ core's and the Python one); which one
serves a process is chosen once, at install. These tests fail if a caller can hold on to the
other one (module-level functions rebound at install, as before: a name imported earlier kept
the Python version), or if the choice can change after install.
"""

from __future__ import annotations

import pytest
import torch
from accel_neuron.emulator import EmulatorError, native, op_info, python_storage, storage

_PATH_FUNCTIONS = (
    "to_neuron",
    "cpu_view",
    "fresh_cpu_view",
    "neuron_storage_for",
    "resize_storage",
    "storage_slice",
    "swap_data_ptr",
    "lazy_clone",
)


def test_path_functions_are_not_module_names() -> None:
    # `from .storage import to_neuron` must not be possible: it would bind one implementation for good
    for name in _PATH_FUNCTIONS:
        assert not hasattr(storage, name), name
    with pytest.raises(ImportError):
        from accel_neuron.emulator.storage import to_neuron  # noqa: F401


def test_no_path_before_install(fresh_process: dict) -> None:
    assert "not installed" in fresh_process["storage_path_before_install"]
    assert "install()" in fresh_process["storage_path_before_install"]


def test_the_selected_path_is_the_hot_path(neuron_emulator: torch.device) -> None:
    assert storage.active().name == native.hot_path()


def test_kernels_call_the_selected_path(neuron_emulator: torch.device) -> None:
    path = storage.active()
    add = op_info.info_for(torch.ops.aten.add.Tensor)
    assert add.to_neuron is path.to_neuron
    assert add.view is path.cpu_view
    resize = op_info.info_for(torch.ops.aten.resize_.default)  # re-points its argument: a fresh view
    assert resize.view is path.fresh_cpu_view


def test_the_collective_staging_uses_the_selected_path(neuron_emulator: torch.device) -> None:
    from accel_neuron.dist_staging import stage

    x = torch.arange(4.0, device=neuron_emulator)
    c = stage(x)
    assert c.device.type == "cpu" and c.data_ptr() == x.data_ptr()
    assert torch.equal(c, torch.arange(4.0))


def test_another_path_cannot_be_selected_after_install(neuron_emulator: torch.device) -> None:
    path = storage.active()
    storage.select(path)  # the same one again: nothing changes
    other = (
        python_storage.PATH
        if path is not python_storage.PATH
        else storage.StoragePath("other", *(getattr(path, f) for f in _PATH_FUNCTIONS))
    )
    with pytest.raises(EmulatorError, match=f"already {path.name!r}.*chosen once per process"):
        storage.select(other)
    assert storage.active() is path
