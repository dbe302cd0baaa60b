"""Device arguments are parsed as devices and mapped to the same index of the selected backend."""

from __future__ import annotations

import pytest
import torch
from accel_cpu.backend import CpuBackend

from accel_abstraction.errors import DeviceIndexError
from accel_abstraction.interface import Backend
from accel_abstraction.redirect import redirect_cuda
from accel_abstraction.redirect.devices import DeviceTranslator


class TwoCpus(CpuBackend):
    """A cpu backend that claims two devices, to see indices carried over."""

    device = Backend.device  # indexed devices (the real cpu backend's carry no index)

    def device_count(self) -> int:
        return 2


def test_indices_carry_over_and_nothing_is_string_replaced() -> None:
    t = DeviceTranslator(TwoCpus())
    assert t.translate("cuda:1") == torch.device("cpu", 1)
    assert t.translate(torch.device("cuda", 1)) == torch.device("cpu", 1)
    assert t.translate("cuda") == torch.device("cpu")
    for untouched in ("cpu", "cudagraph", "my_cuda.pt", "meta", torch.device("cpu"), 3, None):
        assert t.translate(untouched) is untouched
    assert t.device_for(1) == torch.device("cpu", 1)
    assert t.index("cuda:1") == 1 and t.index(None) is None


def test_out_of_range_index_names_the_cuda_device() -> None:
    t = DeviceTranslator(TwoCpus())
    with pytest.raises(DeviceIndexError, match="'cuda:3' cannot be redirected.*'cpu'.*2 devices"):
        t.translate("cuda:3")


def test_every_rank_uses_the_one_device_of_a_single_device_backend() -> None:
    t = DeviceTranslator(CpuBackend())
    assert t.translate("cuda:3") == torch.device("cpu")  # torchrun's LOCAL_RANK=3 runs on the host
    assert t.index(1) is None
    with redirect_cuda():
        torch.cuda.set_device(1)
        assert torch.ones(1, device="cuda:1").device == torch.device("cpu")


def test_to_args_translates_only_device_positions() -> None:
    t = DeviceTranslator(TwoCpus())
    kwargs = {"dtype": torch.float16}
    args, changed = t.to_args(("cuda:1", torch.float16), kwargs)
    assert changed and args == (torch.device("cpu", 1), torch.float16)
    args, changed = t.to_args((torch.float16,), {})
    assert not changed and args == (torch.float16,)
    kwargs = {"device": "cuda"}
    _, changed = t.to_args((), kwargs)
    assert changed and kwargs["device"] == torch.device("cpu")


def test_tensor_and_module_code_lands_on_the_backend() -> None:
    with redirect_cuda():
        lin = torch.nn.Linear(3, 2, device="cuda")
        x = torch.ones(4, 3).cuda()
        y = torch.arange(3, device=torch.device("cuda", 0)).to("cuda:0", torch.float32)
        z = x.new_zeros(2, device="cuda")
        m = torch.nn.Linear(3, 3).cuda()
        torch.set_default_device("cuda")
        try:
            w = torch.empty(2)
        finally:
            torch.set_default_device(None)
    for t in (lin.weight, x, y, z, m.weight, w):
        assert t.device.type == "cpu"


def test_torch_device_context_manager_is_redirected() -> None:
    with redirect_cuda() as r:
        with torch.device("cuda"):
            x = torch.zeros(2)
            layer = torch.nn.Linear(2, 2)
    assert x.device.type == "cpu" and layer.weight.device.type == "cpu"
    assert [s.api for s in r.sites()] == ['with torch.device("cuda")']
    with torch.device("meta"):  # after undo, torch's device context still applies to factories
        assert torch.zeros(1).device.type == "meta"
