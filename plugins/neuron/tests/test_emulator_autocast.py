"""Autocast on neuron: bfloat16 by default, a CUDA-like per-op policy, GradScaler unchanged."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("neuron_emulator")


def test_neuron_autocast_dtype_is_bfloat16():
    assert torch.get_autocast_dtype("neuron") == torch.bfloat16
    with torch.autocast("neuron"):
        assert torch.is_autocast_enabled("neuron")
        y = torch.randn(2, 3, device="neuron") @ torch.randn(3, 4, device="neuron")
    assert y.dtype == torch.bfloat16


def test_policy_lower_precision_fp32_and_promote():
    x = torch.randn(4, 8, device="neuron")
    lin = torch.nn.Linear(8, 8).to("neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        h = lin(x)
        assert h.dtype == torch.bfloat16  # lower precision list
        assert torch.softmax(h, -1).dtype == torch.float32  # fp32 list
        assert F.layer_norm(h, (8,)).dtype == torch.float32
        assert h.exp().dtype == torch.float32
        assert F.relu(h).dtype == torch.bfloat16  # not listed: runs in the input dtype
        assert torch.addcmul(x, h, h).dtype == torch.float32  # promote to the widest input
        assert torch.mm(x.double(), x.double().T).dtype == torch.float64  # float64 is never cast
    with torch.autocast("neuron", dtype=torch.float16):
        assert lin(x).dtype == torch.float16
    assert lin(x).dtype == torch.float32  # outside autocast


def test_autocast_equals_the_explicitly_cast_cpu_computation():
    g = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(16, 8)
    x = torch.randn(4, 16, generator=g)
    bf = torch.bfloat16
    # CUDA's policy, written out: linear in bf16, log_softmax in fp32.
    ref = F.log_softmax(F.linear(x.to(bf), lin.weight.to(bf), lin.bias.to(bf)).float(), -1)
    lin.to("neuron")
    with torch.autocast("neuron", dtype=bf):
        h = lin(x.to("neuron"))
        got = F.log_softmax(h, -1)
    assert h.dtype == bf and got.dtype == torch.float32
    assert torch.equal(got.cpu(), ref)


def _scaled_step(scaler, model, opt, x, poison: bool):
    with torch.autocast("neuron"):
        loss = model(x).float().square().mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    if poison:
        model.weight.grad[0, 0] = float("inf")
    scaler.step(opt)
    scaler.update()


def test_grad_scaler_skips_step_with_inf_grads_and_steps_otherwise():
    model = torch.nn.Linear(8, 4).to("neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("neuron", init_scale=1024.0)
    x = torch.randn(5, 8, device="neuron")
    before = model.weight.detach().clone()
    _scaled_step(scaler, model, opt, x, poison=True)
    assert torch.equal(model.weight.detach(), before)  # step skipped
    assert scaler.get_scale() == 512.0  # scale backed off
    _scaled_step(scaler, model, opt, x, poison=False)
    assert not torch.equal(model.weight.detach(), before)
    assert torch.isfinite(model.weight).all()
    assert scaler.get_scale() == 512.0


def test_bfloat16_default_holds_in_other_threads_and_explicit_choice_wins():
    import threading

    seen = {}

    def worker() -> None:
        with torch.autocast("neuron"):
            seen["default"] = (torch.ones(2, 2, device="neuron") @ torch.ones(2, 2, device="neuron")).dtype
        torch.set_autocast_dtype("neuron", torch.float16)
        seen["explicit"] = torch.get_autocast_dtype("neuron")

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == {"default": torch.bfloat16, "explicit": torch.float16}
    assert torch.get_autocast_dtype("neuron") == torch.bfloat16  # this thread is unaffected
