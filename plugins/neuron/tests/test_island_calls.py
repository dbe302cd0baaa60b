"""How a recurrent op's island (the emulator's CPU islands) takes a call apart: along the op's schema,
read once, not by walking the arguments as a generic tree on every call (test_modules' recurrent tests
paid about 0.2 ms a call for that); keyword arguments and omitted defaults give the CPU's bits."""

from __future__ import annotations

import pytest
import torch
from torch.utils import _pytree


def _lstm_step(device: torch.device | str) -> list[torch.Tensor]:
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(4, 3, num_layers=2).to(device)
    x = torch.randn(5, 2, 4).to(device).requires_grad_()
    out, (h, c) = lstm(x)
    (out.sum() + h.sum() + c.sum()).backward()
    return [t.detach().cpu() for t in (out, h, c, x.grad, lstm.weight_hh_l1.grad)]


def test_an_island_call_does_not_walk_its_arguments_as_a_tree(neuron_emulator, monkeypatch) -> None:
    want = _lstm_step("cpu")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an island walked its arguments with pytree")

    monkeypatch.setattr(_pytree, "tree_flatten", refuse)
    monkeypatch.setattr(_pytree, "tree_map", refuse)
    got = _lstm_step(neuron_emulator)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


def test_an_islands_backward_runs_its_cpu_graph_without_autograd_grads_python(neuron_emulator, monkeypatch) -> None:
    # The incoming gradients were checked by the outer engine run: the island hands its CPU graph to the
    # engine directly (torch.autograd.grad's argument checks cost as much as a small layer's backward).
    want = _lstm_step("cpu")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an island's backward went through torch.autograd.grad")

    monkeypatch.setattr(torch.autograd, "grad", refuse)
    got = _lstm_step(neuron_emulator)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


@pytest.mark.parametrize("grad", [False, True])
def test_a_cell_called_with_keyword_arguments_gives_the_cpus_bits(neuron_emulator, grad: bool) -> None:
    def run(device: torch.device | str) -> list[torch.Tensor]:
        torch.manual_seed(0)
        x, hx = torch.randn(2, 4), torch.randn(2, 3)
        w_ih, w_hh, b_hh = torch.randn(9, 4), torch.randn(9, 3), torch.randn(9)
        ts = [t.to(device).requires_grad_(grad) for t in (x, hx, w_ih, w_hh, b_hh)]
        # b_ih omitted between the positional arguments and b_hh, given by keyword
        out = torch.ops.aten.gru_cell(ts[0], ts[1], w_ih=ts[2], w_hh=ts[3], b_hh=ts[4])
        if not grad:
            return [out.cpu()]
        out.pow(2).sum().backward()
        return [out.detach().cpu(), *(t.grad.cpu() for t in ts)]

    for g, w in zip(run(neuron_emulator), run("cpu"), strict=True):
        assert torch.equal(g, w)


def test_an_op_whose_tensors_the_plan_cannot_take_apart_is_refused_when_made_an_island() -> None:
    from accel_neuron.emulator import cpu_islands
    from accel_neuron.emulator.errors import EmulatorError

    assert cpu_islands._Plan(torch.ops.aten.lstm.input).single is False  # a known layout is taken
    with pytest.raises(EmulatorError, match=r"aten::index takes \['List\[Optional\[Tensor\]\]'\]"):
        cpu_islands._Plan(torch.ops.aten.index.Tensor)


def test_an_islands_cpu_graph_joins_the_devices_so_backward_runs_no_python(neuron_emulator, monkeypatch) -> None:
    # With the C++ core's storage path, an island's inputs that require grad enter its CPU graph as
    # autograd's own copies and its outputs leave it the same way: the caller's one engine run goes
    # through the CPU graph with no autograd Function (Python) and no second engine run.
    from accel_neuron.emulator import cpu_islands, storage

    if storage.active().share_version is None:
        pytest.skip("the Python storage path keeps the island behind an autograd Function")
    want = _lstm_step("cpu")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an island ran its backward through Python")

    monkeypatch.setattr(cpu_islands._Island, "backward", staticmethod(refuse))
    monkeypatch.setattr(cpu_islands, "_run_engine", refuse)
    got = _lstm_step(neuron_emulator)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


def test_an_islands_cpu_copy_of_a_strided_input_keeps_its_strides(neuron_emulator) -> None:
    # test_modules' non-contiguous inputs: the CPU op sees the strides the CPU leg's op sees.
    from accel_neuron.emulator import island_join, storage

    if storage.active().share_version is None:
        pytest.skip("the Python storage path lends zero-copy views instead")
    t = torch.randn(3, 8, device=neuron_emulator)[:, ::2].requires_grad_()
    c = island_join._cpu_copy(t, storage.active().share_version)
    assert c.device.type == "cpu" and c.stride() == t.stride() and torch.equal(c, t.cpu())
    expanded = torch.randn(1, 4, device=neuron_emulator).expand(3, 4)
    assert torch.equal(island_join._cpu_copy(expanded, storage.active().share_version), expanded.cpu())
    before = c._version
    with torch.no_grad():
        t.add_(1)  # the copy counts its versions with its input: an in-place change after forward shows
    assert c._version == t._version == before + 1
