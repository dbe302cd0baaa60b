"""The neuron generator: its own stream, reproducible, and restored by fork_rng and checkpoint."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

pytestmark = pytest.mark.usefixtures("neuron_emulator")


def test_device_stream_is_reproducible_and_differs_from_cpu():
    torch.manual_seed(0)
    a = torch.rand(8, device="neuron")
    torch.manual_seed(0)
    b = torch.rand(8, device="neuron")
    cpu = torch.rand(8)
    assert torch.equal(a, b)
    assert not torch.equal(a.cpu(), cpu)
    assert torch.neuron.initial_seed() == 0
    torch.neuron.manual_seed(1234)
    assert torch.neuron.initial_seed() == 1234


def test_device_ops_do_not_consume_the_cpu_stream():
    torch.manual_seed(0)
    expected = torch.rand(4)
    torch.manual_seed(0)
    torch.randn(100, device="neuron")
    F.dropout(torch.ones(100, device="neuron"), 0.5)
    assert torch.equal(torch.rand(4), expected)


@pytest.mark.parametrize(
    "draw",
    [
        lambda: torch.randn(5, device="neuron"),
        lambda: F.dropout(torch.ones(16, device="neuron"), 0.5),
        lambda: torch.ones(6, device="neuron").bernoulli_(0.3),
        lambda: torch.randint(0, 100, (5,), device="neuron"),
        lambda: torch.randperm(7, device="neuron"),
        lambda: torch.native_dropout(torch.ones(16, device="neuron"), 0.5, True)[0],
        lambda: torch.empty(4, device="neuron").normal_(),
    ],
    ids=["randn", "dropout", "bernoulli_", "randint", "randperm", "native_dropout", "normal_"],
)
def test_get_and_set_rng_state_replay(draw):
    state = torch.neuron.get_rng_state()
    first = draw()
    torch.neuron.set_rng_state(state)
    assert torch.equal(draw(), first)


def test_fork_rng_restores_device_state():
    torch.manual_seed(3)
    with torch.random.fork_rng(device_type="neuron"):
        inside = torch.randn(4, device="neuron")
    assert torch.equal(torch.randn(4, device="neuron"), inside)


def test_device_module_flag_checkpoint_reads_follows_first_use():
    # torch.utils.checkpoint stashes the device's RNG state only if `torch.neuron._initialized`:
    # on the compiled path the C++ core makes the storage, and the flag must still say so.
    torch.randn(2, device="neuron")
    assert torch.neuron._initialized is True
    assert torch.neuron.is_initialized()


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_recomputes_the_same_dropout_masks(use_reentrant):
    lin = torch.nn.Linear(8, 8).to("neuron")

    def f(x):
        return F.dropout(lin(x), 0.5) * torch.rand_like(x)

    x = torch.randn(4, 8, device="neuron", requires_grad=True)
    torch.manual_seed(3)
    y = checkpoint(f, x, use_reentrant=use_reentrant)
    y.square().sum().backward()
    grad_ckpt = x.grad.clone()
    x.grad = None
    torch.manual_seed(3)
    y_plain = f(x)
    y_plain.square().sum().backward()
    assert torch.equal(y, y_plain)
    assert torch.equal(grad_ckpt, x.grad)
