"""Neuron results are bitwise equal to CPU results for the same computation.

Random ops on the neuron device draw from its own generator; to compare a
random computation with the CPU, each run starts from the same generator
state (``torch.neuron.set_rng_state(torch.get_rng_state())``).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("neuron_emulator")


def _seed(device: str, seed: int) -> None:
    torch.manual_seed(seed)
    if device == "neuron":
        torch.neuron.set_rng_state(torch.get_rng_state())


def _train(build, make_batch, device: str, foreach: bool, steps: int = 3):
    torch.manual_seed(0)
    model = build().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, foreach=foreach)
    data = torch.Generator().manual_seed(1)
    _seed(device, 5)
    losses = []
    for _ in range(steps):
        x, y = make_batch(data)
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach().cpu())
    grads = [p.grad.cpu() for p in model.parameters()]
    return losses, [p.detach().cpu() for p in model.parameters()], grads


def _mlp():
    return nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Dropout(0.2), nn.Linear(64, 10))


def _mlp_batch(g):
    return torch.randn(8, 32, generator=g), torch.randint(0, 10, (8,), generator=g)


class _Block(nn.Module):
    """A transformer encoder block (attention with dropout, MLP, LayerNorm) and a classifier head."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


def _block_batch(g):
    return torch.randn(4, 6, 32, generator=g), torch.randint(0, 10, (4,), generator=g)


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "for-loop"])
@pytest.mark.parametrize("model", ["mlp", "transformer"])
def test_training_steps_match_cpu_bitwise(model, foreach):
    build, batch = (_mlp, _mlp_batch) if model == "mlp" else (_Block, _block_batch)
    ref = _train(build, batch, "cpu", foreach)
    got = _train(build, batch, "neuron", foreach)
    for ref_list, got_list in zip(ref, got, strict=True):
        for a, b in zip(ref_list, got_list, strict=True):
            assert torch.equal(a, b)


def test_dropout_matches_cpu_given_the_same_generator_state():
    x = torch.randn(64, 64)
    for fn in (
        lambda t: F.dropout(t, 0.3),
        lambda t: F.dropout(t.clone(), 0.3, inplace=True),
        lambda t: nn.Dropout(0.5)(t),
    ):
        _seed("cpu", 7)
        ref = fn(x)
        _seed("neuron", 7)
        assert torch.equal(fn(x.to("neuron")).cpu(), ref)


@pytest.mark.parametrize("mask", [None, "bool", "float"])
@pytest.mark.parametrize("dropout_p", [0.0, 0.25])
def test_scaled_dot_product_attention_matches_cpu(mask, dropout_p):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 16, 8, generator=g, requires_grad=True) for _ in range(3))
    m = {
        None: None,
        "bool": torch.rand(16, 16, generator=g) > 0.3,
        "float": torch.randn(16, 16, generator=g),
    }[mask]
    qn, kn, vn = (t.detach().to("neuron").requires_grad_() for t in (q, k, v))
    _seed("cpu", 3)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=dropout_p)
    _seed("neuron", 3)
    got = F.scaled_dot_product_attention(
        qn, kn, vn, attn_mask=None if m is None else m.to("neuron"), dropout_p=dropout_p
    )
    assert torch.equal(got.cpu(), ref)
    ref.square().sum().backward()
    got.square().sum().backward()
    for a, b in ((q, qn), (k, kn), (v, vn)):
        assert torch.equal(b.grad.cpu(), a.grad)


OPS = {
    "layer_norm": lambda t: F.layer_norm(t, t.shape[-1:]),
    "rms_norm": lambda t: F.rms_norm(t, t.shape[-1:]),
    "softmax": lambda t: t.softmax(-1),
    "log_softmax": lambda t: t.log_softmax(-1),
    "cross_entropy": lambda t: F.cross_entropy(t, torch.arange(t.shape[0]).to(t.device) % t.shape[1]),
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "matmul": lambda t: t @ t.T,
    "var_mean": lambda t: torch.var_mean(t, 0)[0],
    "norm": lambda t: t.norm(dim=1),
    "cumsum": lambda t: t.cumsum(1),
    "conv1d": lambda t: F.conv1d(t[None], t[:3, None, :3].expand(3, t.shape[0], 3).contiguous()),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_forward_and_backward_ops_match_cpu(name):
    fn = OPS[name]
    x = torch.randn(6, 9, generator=torch.Generator().manual_seed(2), requires_grad=True)
    xn = x.detach().to("neuron").requires_grad_()
    ref, got = fn(x), fn(xn)
    assert got.device.type == "neuron" and torch.equal(got.cpu(), ref)
    ref.sum().backward()
    got.sum().backward()
    assert torch.equal(xn.grad.cpu(), x.grad)
