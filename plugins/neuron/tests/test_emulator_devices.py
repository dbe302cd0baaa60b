"""A CPU tensor meeting a neuron tensor fails like it does on CUDA, in forward and backward."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("neuron_emulator")

SAME_DEVICE = "Expected all tensors to be on the same device"


@pytest.mark.parametrize(
    "fn",
    [
        lambda d, c: d + c,
        lambda d, c: d @ c.T,
        lambda d, c: torch.cat([d, c]),
        lambda d, c: F.linear(c, d),
        lambda d, c: torch.where(c > 0, d, d),
        lambda d, c: d.add_(c),
    ],
    ids=["add", "matmul", "cat", "linear", "where", "add_"],
)
def test_cpu_tensor_meeting_neuron_tensor_raises(fn):
    d, c = torch.randn(3, 4, device="neuron"), torch.randn(3, 4)
    with pytest.raises(RuntimeError, match=SAME_DEVICE) as info:
        fn(d, c)
    assert "neuron:0" in str(info.value) and "cpu" in str(info.value)


def test_model_with_input_left_on_cpu_raises():
    model = torch.nn.Linear(4, 2).to("neuron")
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        model(torch.randn(3, 4))


def test_allowed_mixes_work_like_cuda():
    d = torch.arange(12.0, device="neuron").reshape(3, 4)
    assert (d * torch.tensor(2.0)).cpu()[1, 1].item() == 10.0  # 0-dim CPU scalar
    assert d[torch.tensor([0, 2])].cpu()[:, 0].tolist() == [0.0, 8.0]  # CPU index tensor
    d[torch.tensor([1])] = torch.tensor(-1.0)
    assert d.cpu()[1].tolist() == [-1.0] * 4
    d.copy_(torch.ones(3, 4))  # copies cross devices
    assert d.cpu().sum().item() == 12.0


def test_backward_returning_cpu_gradient_raises():
    class LeaksToCpu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad.cpu()

    w = torch.randn(4, device="neuron", requires_grad=True)
    with pytest.raises(RuntimeError, match="expected device neuron:0 but got cpu"):
        LeaksToCpu.apply(w).sum().backward()


def test_backward_with_cpu_tensor_in_the_graph_raises():
    w = torch.randn(4, device="neuron", requires_grad=True)
    c = torch.randn(4)

    class MixesInBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * c  # a CPU tensor enters the backward computation

    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        MixesInBackward.apply(w).sum().backward()
