"""Recurrent layers (the emulator's CPU islands) and retain_graph: a backward per output, as
PyTorch's test_modules does it, gives the CPU's gradients; without retain_graph a second backward
is refused as on the CPU; double backward (create_graph=True) gives the CPU's second-order
gradients."""

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


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
def test_double_backward_through_a_recurrent_layer_gives_the_cpus_second_order_gradients(
    neuron_emulator, cls
) -> None:
    """PyTorch's test_nn test_LSTM_grad_and_gradgrad / test_GRU_grad_and_gradgrad run gradgradcheck
    through the layer: the island's backward must itself be differentiable (create_graph=True)."""

    def run(device: torch.device | str) -> list[torch.Tensor]:
        torch.manual_seed(0)
        rnn = cls(4, 3).to(device).double()
        x = torch.rand(1, 3, 4, dtype=torch.double).to(device).requires_grad_()
        out, _ = rnn(x)
        (gx, gw) = torch.autograd.grad(out.pow(2).sum(), (x, rnn.weight_ih_l0), create_graph=True)
        assert gx.requires_grad and gw.requires_grad
        (gx.sum() + gw.pow(2).sum()).backward()
        return [x.grad.cpu(), rnn.weight_hh_l0.grad.cpu()]

    for g, w in zip(run(neuron_emulator), run("cpu"), strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-12)


def test_gradgradcheck_through_an_lstm_passes_as_on_the_cpu(neuron_emulator) -> None:
    from functools import partial

    def flat(mod: torch.nn.Module, inp: torch.Tensor) -> tuple:
        out = mod(inp)
        return tuple(t if isinstance(t, torch.Tensor) else tt for t in out for tt in t)

    torch.manual_seed(0)
    mod = torch.nn.LSTM(4, 4).to(neuron_emulator).double()
    inp = torch.rand(1, 3, 4, dtype=torch.double).to(neuron_emulator).requires_grad_()
    assert torch.autograd.gradgradcheck(partial(flat, mod), inp, check_batched_grad=False)


@pytest.mark.parametrize("cls", [torch.nn.RNNCell, torch.nn.LSTM, torch.nn.GRU])
def test_gradients_batched_over_grad_outputs_are_the_cpus(neuron_emulator, cls) -> None:  # type: ignore[no-untyped-def]
    """vmap over the incoming gradients (``is_grads_batched``, gradcheck's batched check: test_modules'
    test_grad/test_gradgrad) reaches an island's backward with batched tensors, which have no memory to
    view zero-copy: their gradients come out by a copy, the CPU's bit for bit."""

    def run(device: torch.device | str) -> torch.Tensor:
        torch.manual_seed(0)
        m = cls(5, 3).double().to(device)
        x = torch.randn(4, 5, dtype=torch.double).to(device).requires_grad_()
        out = m(x) if cls is torch.nn.RNNCell else m(x)[0]
        go = torch.randn(2, *out.shape, dtype=torch.double).to(device)
        (g,) = torch.autograd.grad(out, x, go, is_grads_batched=True)
        return g.cpu()

    assert torch.equal(run(neuron_emulator), run("cpu"))
    torch.manual_seed(0)
    m = cls(5, 3).double().to(neuron_emulator)
    x = torch.randn(4, 5, dtype=torch.double, device=neuron_emulator, requires_grad=True)
    f = (lambda t: m(t)) if cls is torch.nn.RNNCell else (lambda t: m(t)[0])
    assert torch.autograd.gradcheck(f, (x,), check_batched_grad=True)
    assert torch.autograd.gradgradcheck(f, (x,), check_batched_grad=True)
