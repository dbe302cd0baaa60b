"""What the C++ patches of the series (not built here) would fix, shown on the emulated neuron device.

* 0013 (``c10/core/TensorImpl.h``): the new rule is registered as the PrivateUse1 kernel of
  ``aten::_has_compatible_shallow_copy_type``, the operator that c10 function backs (and
  the override point its comment documents): ``Module._apply`` then moves parameters in
  place, as on CUDA.
* 0014 (``aten/src/ATen/native/RNN.cpp``): stock ATen sends PrivateUse1 inputs to the fused
  cells only CUDA/XPU implement; the patched path is the CPU's unfused cell with the
  sequence's input projection batched. Running exactly those ATen ops on the device gives
  the CPU's results bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from accel_abstraction import module_apply
from tests.patches.tied_models import TiedLM, is_tied, train_tied_lm

pytest.importorskip("accel_neuron")


@pytest.fixture(scope="module")
def neuron() -> torch.device:
    from accel_neuron import emulator

    emulator.install()
    return torch.device("neuron")


@pytest.fixture
def stock_module_apply() -> Iterator[None]:
    """Torch's own ``Module._apply`` (the neuron plugin's wrapper, if some test left it on, is paused)."""
    with module_apply.paused():
        yield


# ----------------------------------------------------------------------------- 0013

#: Dense backends of c10's has_compatible_shallow_copy_type after 0013 (PrivateUse1 added).
DENSE_AFTER_0013 = {"cpu", "cuda", "mps", "hip", "xpu", "hpu", "mtia", "neuron"}


def _rule_after_0013(self: torch.Tensor, other: torch.Tensor) -> bool:
    """``TensorImpl::has_compatible_shallow_copy_type`` with PrivateUse1 among the dense backends."""
    dense = all(
        t.layout == torch.strided and not t.is_quantized and t.device.type in DENSE_AFTER_0013
        for t in (self, other)
    )
    if dense:
        return True
    # everything else as c10 decides today: run the operator's own (CompositeImplicit) kernel
    return bool(torch.ops.aten._has_compatible_shallow_copy_type.default.decompose(self, other))


@pytest.fixture
def rule_after_0013(neuron: torch.device, stock_module_apply: None) -> Iterator[None]:
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("_has_compatible_shallow_copy_type", _rule_after_0013, "PrivateUse1")
    yield
    lib._destroy()


def test_0013_stock_c10_splits_tied_weights_and_refuses_data_assignment(
    neuron: torch.device, stock_module_apply: None
) -> None:
    cpu, dev = torch.zeros(2), torch.zeros(2, device=neuron)
    assert not torch._has_compatible_shallow_copy_type(cpu, dev)
    model = TiedLM()
    before = model.wte.weight
    model.to(neuron)
    assert not is_tied(model) and model.wte.weight is not before
    with pytest.raises(RuntimeError, match="incompatible tensor type"):
        nn.Parameter(torch.zeros(2)).data = dev


def test_0013_parameters_move_in_place_as_on_cuda(rule_after_0013: None, neuron: torch.device) -> None:
    model = TiedLM()
    before = list(model.parameters())
    model.to(neuron)
    after = list(model.parameters())
    assert all(a is b for a, b in zip(after, before, strict=True))  # the same Parameter objects
    assert is_tied(model) and all(p.device.type == "neuron" for p in after)
    lazy = nn.LazyLinear(4)
    weight = lazy.weight
    lazy.to(neuron)
    assert lazy.weight is weight and isinstance(weight, nn.UninitializedParameter)
    assert lazy(torch.randn(2, 3, device=neuron)).shape == (2, 4)


def test_0013_an_optimizer_made_before_to_trains_the_moved_model_like_the_cpu(
    rule_after_0013: None, neuron: torch.device
) -> None:
    def train(device: torch.device | str) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = TiedLM()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)  # before .to(), as users often do
        model.to(device)
        idx = torch.randint(0, 64, (3, 2, 9)).to(device)
        for batch in idx:
            loss = model(batch[:, :-1], batch[:, 1:].contiguous())
            opt.zero_grad()
            loss.backward()
            opt.step()
        return [p.detach().cpu() for p in model.parameters()]

    for a, b in zip(train(neuron), train("cpu"), strict=True):
        assert torch.equal(a, b)
    dev = train_tied_lm(neuron)
    assert all(torch.equal(v, dev[k]) for k, v in train_tied_lm("cpu").items())


# ----------------------------------------------------------------------------- 0014


def _unfused_layer(
    cell: Callable[[torch.Tensor, object], object],
    x: torch.Tensor,
    w_ih: torch.Tensor,
    b_ih: torch.Tensor,
    hidden: object,
) -> tuple[torch.Tensor, object]:
    """``FullLayer`` with the batched input projection (``precompute_input_projection``)."""
    outputs = []
    for step in F.linear(x, w_ih, b_ih).unbind(0):
        hidden = cell(step, hidden)
        outputs.append(hidden[0] if isinstance(hidden, tuple) else hidden)
    return torch.stack(outputs, 0), hidden


def _gru_cell(w_hh: torch.Tensor, b_hh: torch.Tensor) -> Callable:
    def cell(igates: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        ig = igates.unsafe_chunk(3, 1)
        hg = F.linear(hidden, w_hh, b_hh).unsafe_chunk(3, 1)
        reset_gate = hg[0].add_(ig[0]).sigmoid_()
        input_gate = hg[1].add_(ig[1]).sigmoid_()
        new_gate = ig[2].add(hg[2].mul_(reset_gate)).tanh_()
        return (hidden - new_gate).mul_(input_gate).add_(new_gate)

    return cell


def _lstm_cell(w_hh: torch.Tensor, b_hh: torch.Tensor) -> Callable:
    def cell(
        igates: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        hx, cx = hidden
        gates = F.linear(hx, w_hh, b_hh).add_(igates).unsafe_chunk(4, 1)
        ingate, forgetgate = gates[0].sigmoid_(), gates[1].sigmoid_()
        cellgate, outgate = gates[2].tanh_(), gates[3].sigmoid_()
        cy = (forgetgate * cx).add_(ingate * cellgate)
        return outgate * cy.tanh(), cy

    return cell


def _rnn_cell(w_hh: torch.Tensor, b_hh: torch.Tensor) -> Callable:
    return lambda igates, hidden: torch.tanh(F.linear(hidden, w_hh, b_hh).add_(igates))


CELLS = {"GRU": (nn.GRU, _gru_cell), "LSTM": (nn.LSTM, _lstm_cell), "RNN": (nn.RNN, _rnn_cell)}


def _inputs(kind: str) -> tuple[nn.Module, torch.Tensor, object]:
    torch.manual_seed(0)
    module = CELLS[kind][0](6, 8)
    x = torch.randn(5, 3, 6)
    h0 = torch.randn(1, 3, 8)
    return module, x, ((h0, torch.randn(1, 3, 8)) if kind == "LSTM" else h0)


def _grads(outputs: list[torch.Tensor], leaves: list[torch.Tensor]) -> list[torch.Tensor]:
    sum(o.sum() for o in outputs).backward()
    return [t.detach().cpu() for t in (*outputs, *(leaf.grad for leaf in leaves))]


def _stock_cpu(kind: str) -> list[torch.Tensor]:
    module, x, h0 = _inputs(kind)
    x.requires_grad_()
    with torch.backends.mkldnn.flags(enabled=False):  # CPU LSTM in fp32 goes to oneDNN otherwise
        out, hn = module(x, h0)
    hidden = list(hn) if isinstance(hn, tuple) else [hn]
    return _grads([out, *hidden], [x, *module.parameters()])


def _patched_path(kind: str, device: torch.device) -> list[torch.Tensor]:
    module, x, h0 = _inputs(kind)
    w_ih, w_hh, b_ih, b_hh = (p.detach().to(device).requires_grad_() for p in module.parameters())
    x = x.to(device).requires_grad_()
    hidden = tuple(h[0].to(device) for h in h0) if isinstance(h0, tuple) else h0[0].to(device)
    out, hn = _unfused_layer(CELLS[kind][1](w_hh, b_hh), x, w_ih, b_ih, hidden)
    final = [h.unsqueeze(0) for h in hn] if isinstance(hn, tuple) else [hn.unsqueeze(0)]
    return _grads([out, *final], [x, w_ih, w_hh, b_ih, b_hh])


class _OpLog(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.ops.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def _aten_decomposition(
    kind: str, module: nn.Module, x: torch.Tensor, h0: object
) -> tuple[torch.Tensor, ...]:
    """ATen's own C++ ``aten::{lstm,gru,rnn_tanh}.input`` kernel (RNN.cpp), whatever a backend
    registered in front of it (the emulator runs these modules as CPU islands). Not
    ``OpOverload.decompose()``: that prefers torch._decomp's Python reimplementation."""
    op = {
        "GRU": torch.ops.aten.gru.input,
        "LSTM": torch.ops.aten.lstm.input,
        "RNN": torch.ops.aten.rnn_tanh.input,
    }
    hx = list(h0) if isinstance(h0, tuple) else h0
    args = (x, hx, module._flat_weights, True, 1, 0.0, True, False, False)
    return op[kind]._op_dk(torch._C.DispatchKey.CompositeImplicitAutograd, *args)


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_0014_stock_aten_sends_privateuse1_to_the_fused_cell(kind: str, neuron: torch.device) -> None:
    module, x, h0 = _inputs(kind)
    module.to(neuron)
    h0 = tuple(h.to(neuron) for h in h0) if isinstance(h0, tuple) else h0.to(neuron)
    log = _OpLog()
    try:
        with log:
            _aten_decomposition(kind, module, x.to(neuron), h0)
    except NotImplementedError as exc:  # a backend without the CUDA-only kernel
        assert f"_thnn_fused_{kind.lower()}_cell" in str(exc)
    assert f"_thnn_fused_{kind.lower()}_cell" in log.ops


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")
@pytest.mark.parametrize("kind", ["GRU", "LSTM", "RNN"])
def test_0014_the_patched_path_on_the_device_is_bitwise_the_cpu(kind: str, neuron: torch.device) -> None:
    reference = _stock_cpu(kind)
    assert all(
        torch.equal(a, b) for a, b in zip(_patched_path(kind, torch.device("cpu")), reference, strict=True)
    )
    on_device = _patched_path(kind, neuron)  # output, final state(s), grads of input and weights
    for got, want in zip(on_device, reference, strict=True):
        assert torch.equal(got, want)


def test_0014_stock_rnn_on_privateuse1_projects_each_step_and_differs(neuron: torch.device) -> None:
    module, x, h0 = _inputs("RNN")
    cpu_ops, dev_ops = _OpLog(), _OpLog()
    with cpu_ops:
        _aten_decomposition("RNN", module, x, h0)
    module.to(neuron)
    with dev_ops:
        _aten_decomposition("RNN", module, x.to(neuron), h0.to(neuron))
    steps = x.shape[0]
    # CPU: one batched projection + one per step; stock PrivateUse1: two per step
    assert cpu_ops.ops.count("addmm") == steps + 1
    assert dev_ops.ops.count("addmm") == 2 * steps
