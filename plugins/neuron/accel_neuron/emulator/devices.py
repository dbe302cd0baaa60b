"""The emulated devices: how many there are, which one is current, and index checks.

The count is fixed when the emulator installs (``ACCEL_NEURON_EMULATE_DEVICES`` /
``[tool.accel.neuron] emulate_devices``, default 2) and never changes in the process.
The current device is per thread, as CUDA's is: a new thread starts on ``neuron:0``.
It lives in the emulator's C++ device guard (``native.py``), where PyTorch's C++ code
reads it too; without that guard it is always 0.
"""

from __future__ import annotations

import torch

from . import native
from .errors import EmulatorError

_state: dict[str, object] = {"count": 0, "source": "default"}

#: ``torch.device("neuron", i)`` for every emulated index, filled by :func:`configure`.
DEVICES: list[torch.device] = []


def count() -> int:
    """How many devices the emulator shows."""
    return len(DEVICES)


def source() -> str:
    """Where the device count came from (an environment variable, a file and line, ...)."""
    return str(_state["source"])


def current() -> int:
    """The current device index of the calling thread (replaced by the C++ guard's at install)."""
    return 0


def _set_current(index: int) -> None:
    if index != 0:
        raise EmulatorError(
            f"cannot make neuron:{index} the current device: that needs the neuron emulator's C++ device "
            f"guard, which could not be built ({native.failure()}). Install a C++ compiler and ninja "
            "(see 'Emulator limits' in plugins/neuron/README.md), or address the device explicitly "
            f"(torch.device('neuron', {index}), .to('neuron:{index}'))."
        )


def set_current(index: int) -> None:
    """Make ``index`` (already checked) the calling thread's current device."""
    _set_current(index)


def configure(count: int, source: str) -> None:
    """Fix the number of devices and register the C++ guard (at install, once PrivateUse1 is named ``neuron``)."""
    global current, _set_current
    _state["count"] = count
    _state["source"] = source
    DEVICES[:] = [torch.device("neuron", i) for i in range(count)]
    if native.register(count):
        lib = native.library()
        current = lib.accel_neuron_emulator_current_device
        _set_current = lib.accel_neuron_emulator_set_current_device


def check(index: int) -> int:
    """Return ``index`` if it names an emulated device, else raise :class:`EmulatorError`."""
    n = len(DEVICES)
    if 0 <= index < n:
        return index
    raise EmulatorError(
        f"device neuron:{index} does not exist: the neuron emulator has {n} device"
        f"{'s' if n != 1 else ''} (neuron:0 to neuron:{n - 1}; count from {source()}). "
        "Set ACCEL_NEURON_EMULATE_DEVICES or [tool.accel.neuron] emulate_devices to emulate more."
    )


def index_of(device: int | str | torch.device | None) -> int:
    """The device index a ``device`` argument names (``None``, ``"neuron"`` and -1: the current one)."""
    if device is None or (device.__class__ is str and device == "neuron"):
        # the default of torch.neuron's functions, read on every freeze_rng_state of PyTorch's tests:
        # without building a torch.device (1 us)
        return current()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "neuron":
            raise ValueError(f"expected a neuron device, got {device}")
        idx = device.index
        if idx is None:
            return current()
    elif isinstance(device, int) and not isinstance(device, bool):
        idx = device
    else:
        raise TypeError(f"expected a device index, string or torch.device, got {device!r}")
    if idx == -1:
        return current()
    return check(idx)
