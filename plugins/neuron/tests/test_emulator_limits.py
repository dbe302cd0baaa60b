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


def test_storage_deepcopy_save_and_load_do_not_crash(run_python):
    proc = run_python(
        """
        import copy, io, torch
        from accel_neuron import emulator
        emulator.install()
        s = torch.UntypedStorage(16, device="neuron")
        assert s.device.type == "neuron" and s.nbytes() == 16
        x = torch.arange(4.0, device="neuron")
        y = copy.deepcopy(x)
        assert y.device.type == "neuron" and torch.equal(y.cpu(), x.cpu())
        assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
        assert x.untyped_storage().clone().device.type == "neuron"
        buf = io.BytesIO(); torch.save({"x": x}, buf)
        for loc in (None, "neuron", "cpu"):
            buf.seek(0)
            z = torch.load(buf, map_location=loc)["x"]
            assert z.device.type == ("cpu" if loc == "cpu" else "neuron"), (loc, z.device)
            assert torch.equal(z.cpu(), x.cpu())
        buf = io.BytesIO(); torch.save(torch.ones(2), buf); buf.seek(0)
        assert torch.load(buf, map_location="neuron").device.type == "neuron"
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


def test_in_process_copies_and_serialization_round_trip():
    m = torch.nn.Linear(3, 2).to("neuron")
    m2 = copy.deepcopy(m)
    assert m2.weight.device.type == "neuron" and torch.equal(m2.weight.cpu(), m.weight.cpu())
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf, map_location="neuron")
    assert all(torch.equal(sd[k].cpu(), v.cpu()) for k, v in m.state_dict().items())


def test_second_device_is_a_clear_error():
    from accel_neuron.emulator import EmulatorError

    for make in (
        lambda: torch.ones(2, device="neuron:1"),
        lambda: torch.ones(2).to("neuron:1"),
        lambda: torch.UntypedStorage(4, device="neuron:1"),
        lambda: torch.neuron.set_device(1),
    ):
        with pytest.raises(EmulatorError, match="one device per process"):
            make()


def test_generator_on_device_raises_a_clean_error():
    with pytest.raises((NotImplementedError, RuntimeError), match="getNewGenerator|neuron"):
        torch.Generator(device="neuron")


def test_pin_memory_returns_an_unpinned_copy():
    x = torch.arange(4.0)
    p = x.pin_memory()
    assert torch.equal(p, x) and p.data_ptr() != x.data_ptr() and not p.is_pinned()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.arange(6.0)), batch_size=3, pin_memory=True
    )
    assert [b[0].tolist() for b in loader] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
