"""The C++ core's recurrent-op islands (csrc/islands.cpp): a training step's forward and backward
through nn.LSTM / GRU / RNN run no Python island and give the CPU's bits; everything else goes to the
Python island (cpu_islands.py), which still gives the CPU's bits or its errors."""

from __future__ import annotations

import re

import pytest
import torch
import torch.autograd.forward_ad as fwAD


def _step(
    device: torch.device | str, cls: type = torch.nn.LSTM, strided: bool = False, **kw
) -> list[torch.Tensor]:
    torch.manual_seed(0)
    layer = cls(4, 3, num_layers=2, **kw).to(device)
    x = torch.randn(5, 2, 8 if strided else 4).to(device)
    x = (x[..., ::2] if strided else x).requires_grad_()  # gaps: the island copies x with its strides
    out, h = layer(x)
    h = h if isinstance(h, torch.Tensor) else torch.stack(h)
    (out.sum() + h.sum()).backward()
    return [t.detach().cpu() for t in (out, h, x.grad, *(p.grad for p in layer.parameters()))]


@pytest.fixture
def no_python_island(compiled, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the calls that reach the Python island (cpu_islands._Call takes each apart)."""
    from accel_neuron.emulator import cpu_islands

    calls: list[str] = []
    real = cpu_islands._Call

    def counted(plan, args, kwargs):  # type: ignore[no-untyped-def]
        calls.append(plan.op._schema.name)
        return real(plan, args, kwargs)

    monkeypatch.setattr(cpu_islands, "_Call", counted)
    return calls


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
@pytest.mark.parametrize("strided", [False, True])
def test_a_training_step_runs_no_python_island_and_gives_the_cpus_bits(
    neuron_emulator, no_python_island, cls, strided
) -> None:
    want = _step("cpu", cls, strided)
    got = _step(neuron_emulator, cls, strided)
    assert no_python_island == []
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


def test_without_autograd_the_compiled_island_serves_the_call(neuron_emulator, no_python_island) -> None:
    torch.manual_seed(0)
    layer = torch.nn.GRU(4, 3)
    x = torch.randn(5, 2, 4)
    with torch.no_grad():
        want = layer(x)[0]
        got = layer.to(neuron_emulator)(x.to(neuron_emulator))[0]
    assert no_python_island == [] and got.device.type == "neuron" and torch.equal(got.cpu(), want)


def test_dropout_between_layers_draws_the_devices_stream(neuron_emulator, no_python_island) -> None:
    from accel_neuron.emulator import rng

    torch.manual_seed(0)
    layer = torch.nn.LSTM(4, 3, num_layers=3, dropout=0.5)
    x = torch.randn(5, 2, 4)
    device_state = rng.generators[0].get_state()
    cpu_state = torch.get_rng_state()
    torch.set_rng_state(device_state)  # the CPU run draws what the device's stream holds
    want = layer(x)[0]
    device_after = torch.get_rng_state()
    torch.set_rng_state(cpu_state)
    got = layer.to(neuron_emulator)(x.to(neuron_emulator))[0]
    assert no_python_island == []
    assert torch.equal(got.detach().cpu(), want.detach())
    assert torch.equal(rng.generators[0].get_state(), device_after)  # the device's stream moved on
    assert torch.equal(torch.get_rng_state(), cpu_state)  # the CPU's did not


def test_an_in_place_change_of_a_weight_after_forward_fails_backward_as_on_the_cpu(
    neuron_emulator, no_python_island
) -> None:
    def run(device: torch.device | str) -> str:
        layer = torch.nn.LSTM(4, 3).to(device)
        out = layer(torch.randn(5, 2, 4, device=device))[0]
        with torch.no_grad():
            layer.weight_hh_l0.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
            out.sum().backward()
        return str(e.value)

    for device in ("cpu", neuron_emulator):  # (the versions differ: .to() gives the device new tensors)
        at, expected = map(
            int, re.search(r"is at version (\d+); expected version (\d+)", run(device)).groups()
        )  # type: ignore[union-attr]
        assert at == expected + 1
    assert no_python_island == []


@pytest.mark.parametrize("inference_input", [False, True])
def test_in_inference_mode_the_compiled_island_gives_the_cpus_kind_of_tensor(
    neuron_emulator, no_python_island, inference_input
) -> None:
    # Evaluation under torch.inference_mode(): the CPU op sees inputs of the kinds the CPU run's op sees
    # (a normal tensor stays one), and the results are inference tensors as on the CPU.
    def run(device: torch.device | str) -> torch.Tensor:
        torch.manual_seed(0)
        layer = torch.nn.LSTM(4, 3, num_layers=2).to(device)
        with torch.inference_mode(inference_input):
            x = torch.randn(5, 2, 4).to(device)
        with torch.inference_mode():
            out = layer(x)[0]
        assert out.is_inference() and x.is_inference() == inference_input
        return out.cpu()

    want = run("cpu")
    assert torch.equal(run(neuron_emulator), want)
    assert no_python_island == []


def test_forward_ad_and_transforms_go_to_the_python_island(neuron_emulator, no_python_island) -> None:
    torch.manual_seed(0)
    layer = torch.nn.RNN(4, 3)
    x = torch.randn(5, 2, 4)
    want = layer(x)[0].detach()
    layer = layer.to(neuron_emulator)
    xn = x.to(neuron_emulator)
    with fwAD.dual_level():  # (no dual input: the Python island has no forward-mode formula either)
        assert torch.equal(layer(xn)[0].detach().cpu(), want)
    assert no_python_island == ["aten::rnn_tanh"]
    out = torch.func.functional_call(layer, dict(layer.named_parameters()), (xn,))[0]
    assert torch.equal(out.detach().cpu(), want)  # no transform: the compiled island
    assert len(no_python_island) == 1
    # under a transform: the Python island (whose autograd Function, as before, functorch cannot run)
    with pytest.raises(RuntimeError, match="setup_context"):
        torch.func.grad(lambda inp: layer(inp)[0].sum())(xn)
    assert no_python_island[1:] == ["aten::rnn_tanh"]


def test_tensors_on_two_devices_are_refused_by_the_python_island(neuron_emulator, no_python_island) -> None:
    layer = torch.nn.GRU(4, 3).to(neuron_emulator)
    with pytest.raises(RuntimeError, match="device"):
        layer(torch.randn(5, 2, 4))  # a CPU input to a neuron layer, as CUDA refuses it


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
def test_an_in_place_change_of_an_output_is_caught_or_carried_as_on_the_cpu(
    neuron_emulator, compiled, cls
) -> None:
    # Outputs leave the island over their memory, counting versions with the CPU graph's tensors: where
    # the CPU graph saved an output, changing it in place fails backward as on the CPU; else the
    # gradients are the CPU's. (The Python island hands out copies: there the CPU graph's saved output
    # stays as it was, and backward runs; a gap of the Python per-op path.)
    def run(device: torch.device | str) -> object:
        torch.manual_seed(0)
        layer = cls(4, 3, num_layers=2).to(device)
        out = layer(torch.randn(5, 2, 4).to(device))[0]
        out.mul_(2)
        try:
            out.sum().backward()
        except RuntimeError as e:
            return "modified by an inplace operation" in str(e)
        return [p.grad.cpu() for p in layer.parameters()]

    want, got = run("cpu"), run(neuron_emulator)
    if isinstance(want, bool):
        assert got == want
    else:
        assert isinstance(got, list) and all(torch.equal(g, w) for g, w in zip(got, want, strict=True))


def test_a_training_step_moves_no_tensor_across_the_islands_edges(neuron_emulator, compiled) -> None:
    # Inputs enter the CPU graph and outputs leave it over their memory; gradients cross back the same
    # way (autograd's copies, one per weight and output each way, took most of a small layer's cost).
    # (The profiler counts the ops without giving the tensors Python objects, which a dispatch mode
    # would: a gradient another object holds is copied, not taken over.)
    def copies(device: torch.device | str) -> list[str]:
        layer = torch.nn.LSTM(4, 3, num_layers=2).to(device)
        x = torch.randn(5, 2, 4, device=device)
        with torch.autograd.profiler.profile() as prof:
            out, (h, c) = layer(x)
            (out.sum() + h.sum() + c.sum()).backward()
        names = [e.name for e in prof.function_events]
        assert "aten::lstm" in names and all(p.grad is not None for p in layer.parameters())
        return [n for n in names if n in ("aten::_to_copy", "aten::copy_")]

    assert copies(neuron_emulator) == copies("cpu")  # the CPU op's own copies only
