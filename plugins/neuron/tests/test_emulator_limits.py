"""What a Python backend cannot provide is handled or fails with an error naming the emulator limit.

Crash-prone paths (allocation by C++ through a device allocator) run in a
subprocess so a regression shows up as a failed test, not a dead test run.
"""

from __future__ import annotations

import copy
import io

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron_emulator")


def test_storage_deepcopy_save_and_load_do_not_crash(fresh_process):
    # run in a fresh process (conftest.py): unhandled, these crash the interpreter
    assert fresh_process["storage"] == ["neuron", 16]
    assert fresh_process["deepcopy"] == ["neuron", True, True]
    assert fresh_process["storage_clone"] == "neuron"
    assert fresh_process["load"] == {
        "None": ["neuron", True],
        "neuron": ["neuron", True],
        "cpu": ["cpu", True],
    }
    assert fresh_process["load_cpu_file_to_neuron"] == "neuron"


def test_in_process_copies_and_serialization_round_trip():
    m = torch.nn.Linear(3, 2).to("neuron")
    m2 = copy.deepcopy(m)
    assert m2.weight.device.type == "neuron" and torch.equal(m2.weight.cpu(), m.weight.cpu())
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf, map_location="neuron")
    assert all(torch.equal(sd[k].cpu(), v.cpu()) for k, v in m.state_dict().items())


def test_device_beyond_the_emulated_count_is_a_clear_error():
    from accel_neuron.emulator import EmulatorError

    n = torch.neuron.device_count()
    for make in (
        lambda: torch.ones(2, device=f"neuron:{n}"),
        lambda: torch.ones(2).to(f"neuron:{n}"),
        lambda: torch.UntypedStorage(4, device=f"neuron:{n}"),
        lambda: torch.neuron.set_device(n),
        lambda: torch.neuron.device(n),
    ):
        with pytest.raises(
            EmulatorError, match=f"neuron:{n} does not exist: the neuron emulator has {n} dev"
        ):
            make()
