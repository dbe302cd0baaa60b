"""torch.compile on the emulated neuron device: the ``neuron`` backend, and default inductor routed to it.

A small GPT-style model (embeddings, causal SDPA, LayerNorm, GELU, cross-entropy) trained a
few AdamW steps compiled on neuron must match eager CPU within 1e-5 (it matches bitwise:
the compiled graphs run the same CPU kernels through the emulator).
"""

from __future__ import annotations

import copy
import logging

import pytest
import torch
import torch.nn.functional as F
from torch import nn

pytestmark = pytest.mark.usefixtures("neuron_emulator")


class Block(nn.Module):
    def __init__(self, width: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 64, width: int = 32, context: int = 16) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.Sequential(Block(width), Block(width))
        self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        logits = self.head(self.ln(self.blocks(x)))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def _train(model: nn.Module, device: str, compile_kwargs: dict | None, steps: int = 3) -> list[torch.Tensor]:
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = torch.compile(model, **compile_kwargs) if compile_kwargs is not None else model
    data = torch.Generator().manual_seed(1)
    for _ in range(steps):
        idx, targets = (torch.randint(0, 64, (4, 16), generator=data) for _ in range(2))
        loss = step(idx.to(device), targets.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert {str(p.device) for p in model.parameters()} == {
        device if ":" in device or device == "cpu" else device + ":0"
    }
    return [p.detach().cpu() for p in model.parameters()]


@pytest.fixture(scope="module")
def cpu_reference() -> tuple[nn.Module, list[torch.Tensor]]:
    torch.manual_seed(0)
    model = TinyGPT()
    return model, _train(copy.deepcopy(model), "cpu", None)


def _max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max((x - y).abs().max().item() for x, y in zip(a, b, strict=True))


def test_accel_names_the_neuron_backend_and_it_trains_like_cpu_eager(cpu_reference, monkeypatch):
    import accel_abstraction as accel

    monkeypatch.setenv("ACCEL_NEURON_EMULATE", "1")
    with accel.using("neuron"):
        backend = accel.capabilities().compile_backend
    assert backend == "neuron"
    torch._dynamo.reset()
    model, reference = cpu_reference
    got = _train(copy.deepcopy(model), "neuron", {"backend": backend})
    assert _max_diff(got, reference) <= 1e-5


def test_default_inductor_compile_runs_through_the_neuron_backend(cpu_reference, caplog, monkeypatch):
    from accel_neuron.emulator import compile as emulator_compile

    monkeypatch.setitem(emulator_compile._state, "routed_logged", False)  # it is said once per process
    torch._dynamo.reset()
    model, reference = cpu_reference
    with caplog.at_level(logging.WARNING, logger="accel_neuron.emulator"):
        got = _train(copy.deepcopy(model), "neuron:1", {})  # nanoGPT's model = torch.compile(model)
    assert _max_diff(got, reference) <= 1e-5
    routed = [
        r for r in caplog.records if "inductor cannot generate code for the emulated neuron" in r.message
    ]
    assert len(routed) == 1 and "backend=accel.capabilities().compile_backend" in routed[0].message


def test_dynamo_knows_the_device():
    from torch._dynamo.device_interface import get_interface_for_device

    torch.compile(lambda x: x)  # registration happens with the first torch.compile
    interface = get_interface_for_device("neuron")
    assert get_interface_for_device("neuron:1") is interface
    assert interface.device_count() == torch.neuron.device_count() and interface.is_available()
    with interface.device(1):
        assert interface.current_device() == 1 == interface.Worker.current_device()
    assert interface.current_device() == 0
    interface.synchronize()


@pytest.mark.parametrize("case", ["flash", "bool-mask", "3-dim", "mask-requires-grad"])
def test_compiled_sdpa_takes_the_kernel_eager_takes_bitwise(case):
    # Traced with fake and functional tensors, SDPA must still take the CPU's kernel (its flash kernel
    # where eager takes it): the compiled path's chooser entry (csrc/sdpa.cpp) reads the fake tensors'
    # metadata, the Python path's sdp_choice asks about CPU stand-ins (compile.py).
    g = torch.Generator().manual_seed(0)
    shape = (3, 5, 8) if case == "3-dim" else (2, 3, 5, 8)
    q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
    mask = {
        "bool-mask": torch.rand(5, 5, generator=g) > 0.3,
        "mask-requires-grad": torch.randn(5, 5, generator=g),
    }.get(case)

    def attend(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m).square().sum()

    def grads(fn, device):
        qq, kk, vv = (t.to(device).requires_grad_() for t in (q, k, v))
        m = None if mask is None else mask.to(device).requires_grad_(case == "mask-requires-grad")
        wrt = (qq, kk, vv) + ((m,) if case == "mask-requires-grad" else ())
        loss = fn(qq, kk, vv, m)
        return [loss.detach().cpu(), *(t.cpu() for t in torch.autograd.grad(loss, wrt))]

    torch._dynamo.reset()
    cpu, eager = grads(attend, "cpu"), grads(attend, "neuron")
    compiled = grads(torch.compile(attend, backend="neuron"), "neuron")
    assert all(torch.equal(a, b) for a, b in zip(cpu, eager, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(eager, compiled, strict=True))
