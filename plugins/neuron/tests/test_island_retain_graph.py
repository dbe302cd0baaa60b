"""Recurrent layers (the emulator's CPU islands) and retain_graph: a backward per output, as
PyTorch's test_modules does it, gives the CPU's gradients; without retain_graph a second backward
is refused as on the CPU."""

from __future__ import annotations

import pytest
import torch


def _per_output_backward(device: torch.device | str, retain: bool) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    rnn = torch.nn.GRU(4, 3, num_layers=2).to(device)
    x = torch.randn(5, 2, 4).to(device).requires_grad_()
    out, h = rnn(x)
    out.backward(torch.ones_like(out), retain_graph=retain)
    h.backward(torch.full_like(h, 0.5), retain_graph=retain)
    return x.grad.cpu(), rnn.weight_ih_l0.grad.cpu()


def test_a_backward_per_output_with_retain_graph_gives_the_cpus_gradients(neuron_emulator) -> None:
    want = _per_output_backward("cpu", retain=True)
    got = _per_output_backward(neuron_emulator, retain=True)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


def test_a_second_backward_without_retain_graph_is_refused_as_on_the_cpu(neuron_emulator) -> None:
    for device in ("cpu", neuron_emulator):
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            _per_output_backward(device, retain=False)


def test_under_saved_tensor_hooks_one_backward_still_gives_the_cpus_gradients(neuron_emulator) -> None:
    def run(device: torch.device | str) -> torch.Tensor:
        torch.manual_seed(0)
        lstm = torch.nn.LSTM(4, 3).to(device)
        x = torch.randn(5, 2, 4).to(device).requires_grad_()
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            out, _ = lstm(x)
        out.sum().backward()
        return x.grad.cpu()

    assert torch.equal(run(neuron_emulator), run("cpu"))
