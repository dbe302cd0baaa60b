"""Where ATen decides by device inside an op, emulated neuron still computes what the CPU computes.

Recurrent layers (fused cells and batched input projection only off the CPU), the
SDPA kernel choice (which depends on what requires grad), kernels the CPU reaches
directly (``mish_backward``, ``native_channel_shuffle``), zero gradients
(``_efficientzerotensor``), sparse tensors (a clear error), and the chunked
``linear_cross_entropy`` accumulation dtype.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("neuron_emulator")


def _both(fn, *tensors: torch.Tensor, grad: bool = True):
    """fn on CPU copies and on neuron copies of `tensors`: (outputs, grads) per device, on the CPU."""
    out = []
    for dev in ("cpu", "neuron"):
        xs = [t.detach().to(dev).requires_grad_(grad and t.is_floating_point()) for t in tensors]
        y = fn(*xs)
        ys = y if isinstance(y, tuple) else (y,)
        grads = []
        if grad:
            diff = [t for t in xs if t.requires_grad]
            grads = torch.autograd.grad(ys, diff, [torch.ones_like(o) for o in ys])
        out.append(([o.detach().cpu() for o in ys], [g.cpu() for g in grads]))
    return out


def _assert_bitwise(pair) -> None:
    (co, cg), (no, ng) = pair
    for a, b in zip(co + cg, no + ng, strict=True):
        assert torch.equal(a, b), (a - b).abs().max()


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_recurrent_layers_train_like_the_cpu(cls, bidirectional: bool) -> None:
    torch.manual_seed(0)
    cpu = cls(6, 5, num_layers=2, bidirectional=bidirectional, batch_first=True)
    neuron = cls(6, 5, num_layers=2, bidirectional=bidirectional, batch_first=True).to("neuron")
    neuron.load_state_dict(cpu.state_dict())
    x = torch.randn(3, 4, 6)
    for m, dev in ((cpu, "cpu"), (neuron, "neuron")):
        m(x.to(dev))[0].square().sum().backward()
    for (name, p), q in zip(cpu.named_parameters(), neuron.parameters(), strict=True):
        assert torch.equal(p.grad, q.grad.cpu()), name
    with torch.no_grad():
        assert torch.equal(cpu(x)[0], neuron(x.to("neuron"))[0].cpu())
    with torch.inference_mode():
        assert torch.equal(cpu(x)[0], neuron(x.to("neuron"))[0].cpu())


@pytest.mark.parametrize("cls", [nn.LSTMCell, nn.GRUCell, nn.RNNCell])
def test_recurrent_cells_match_the_cpu(cls) -> None:
    torch.manual_seed(0)
    cell = cls(4, 3)
    x, h = torch.randn(2, 4), torch.randn(2, 3)
    hx = (h, h.clone()) if cls is nn.LSTMCell else h

    def step(x, *state):
        m = cell if x.device.type == "cpu" else cell_n
        return m(x, tuple(state) if cls is nn.LSTMCell else state[0])

    cell_n = cls(4, 3).to("neuron")
    cell_n.load_state_dict(cell.state_dict())
    _assert_bitwise(_both(step, x, *(hx if isinstance(hx, tuple) else (hx,))))


def test_lstm_dropout_draws_from_the_device_generator() -> None:
    torch.manual_seed(0)
    cpu = nn.LSTM(4, 5, num_layers=3, dropout=0.5)
    neuron = nn.LSTM(4, 5, num_layers=3, dropout=0.5).to("neuron")
    neuron.load_state_dict(cpu.state_dict())
    x = torch.randn(6, 2, 4)
    torch.manual_seed(3)
    expected = cpu(x)[0]
    torch.manual_seed(3)
    state = torch.get_rng_state()
    torch.manual_seed(99)  # the CPU generator's state must not matter, only the device's
    torch.neuron.set_rng_state(state)
    assert torch.equal(expected, neuron(x.to("neuron"))[0].cpu())


def _recurrent_twins(layer: type[nn.RNNBase], device: str) -> tuple[nn.RNNBase, nn.RNNBase, torch.Tensor]:
    """One recurrent layer (3 -> 4) on the CPU and a copy on ``device``, and a (5, 2, 3) CPU input."""
    torch.manual_seed(0)
    cpu = layer(3, 4)
    on_device = layer(3, 4).to(device)
    on_device.load_state_dict(cpu.state_dict())
    return cpu, on_device, torch.randn(5, 2, 3)


def test_packed_sequence_lstm_matches_the_cpu() -> None:
    cpu, neuron, x = _recurrent_twins(nn.LSTM, "neuron")
    outs = []
    for m, dev in ((cpu, "cpu"), (neuron, "neuron")):
        packed = nn.utils.rnn.pack_padded_sequence(x.to(dev), torch.tensor([5, 3]))
        out, _ = nn.utils.rnn.pad_packed_sequence(m(packed)[0])
        out.sum().backward()
        outs.append((out.detach().cpu(), [p.grad.cpu() for p in m.parameters()]))
    assert torch.equal(outs[0][0], outs[1][0])
    assert all(torch.equal(a, b) for a, b in zip(outs[0][1], outs[1][1], strict=True))


def test_recurrent_layer_on_a_second_device_stays_there() -> None:
    cpu, neuron, x = _recurrent_twins(nn.GRU, "neuron:1")
    out = neuron(x.to("neuron:1"))[0]
    out.sum().backward()
    cpu(x)[0].sum().backward()
    assert out.device == torch.device("neuron:1") and neuron.weight_hh_l0.grad.device == out.device
    assert torch.equal(cpu.weight_hh_l0.grad, neuron.weight_hh_l0.grad.cpu())
    with pytest.raises(RuntimeError, match="same device"):
        neuron(x.to("neuron:0"))


def test_recurrent_input_modified_in_place_after_forward_is_caught() -> None:
    lstm = nn.LSTM(3, 4).to("neuron")
    x = torch.randn(2, 1, 3, device="neuron", requires_grad=True)
    y = x * 1
    out, _ = lstm(y)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_recurrent_layer_rejects_a_cpu_hidden_state() -> None:
    lstm = nn.LSTM(3, 4).to("neuron")
    h = torch.zeros(1, 1, 4)
    with pytest.raises(RuntimeError, match="same device"):
        lstm(torch.randn(2, 1, 3, device="neuron"), (h, h))


@pytest.mark.parametrize(
    ("mask", "causal"),
    [(None, False), (None, True), ("bool", False), ("float", False), ("float-requires-grad", False)],
)
def test_sdpa_forward_and_backward_match_the_cpu(mask: str | None, causal: bool) -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8) for _ in range(3))
    m = {
        None: None,
        "bool": torch.rand(5, 5) > 0.3,
        "float": torch.randn(5, 5),
        "float-requires-grad": torch.randn(5, 5),
    }[mask]
    results = []
    for dev in ("cpu", "neuron"):
        qq, kk, vv = (t.to(dev).requires_grad_() for t in (q, k, v))
        mm = None if m is None else m.to(dev).requires_grad_(mask == "float-requires-grad")
        out = F.scaled_dot_product_attention(qq, kk, vv, attn_mask=mm, is_causal=causal)
        wrt = (qq, kk, vv) + ((mm,) if mm is not None and mm.requires_grad else ())
        grads = torch.autograd.grad(out.square().sum(), wrt)
        results.append([out.detach().cpu(), *(g.cpu() for g in grads)])
    assert all(torch.equal(a, b) for a, b in zip(*results, strict=True))


# Inputs of each kind the CPU's SDPA chooser tells apart (the compiled path asks it in C++, csrc/sdpa.cpp;
# the Python path through composite_overrides._sdpa): flash-eligible, math-eligible (3 dims on torch < 2.15,
# head dims that differ, dropout, a mask that needs its gradient), both mask kinds, a mask whose last
# stride is not 1 (off the CPU that alone rules flash out), grouped-query heads, float64.
SDPA_CASES = {
    "flash": dict(shape=(2, 3, 5, 8)),
    "flash-no-grad": dict(shape=(2, 3, 5, 8), grad=False),
    "3-dim": dict(shape=(3, 5, 8)),
    "3-dim-bool-mask": dict(shape=(3, 5, 8), mask="bool"),
    "3-dim-no-grad": dict(shape=(3, 5, 8), grad=False),
    "head-dims-differ": dict(shape=(2, 3, 5, 8), v_dim=6),
    "bool-mask-4-dim": dict(shape=(2, 3, 5, 8), mask="bool4"),
    "float-mask-strided": dict(shape=(2, 3, 5, 8), mask="float-t"),
    "float-mask-requires-grad": dict(shape=(2, 3, 5, 8), mask="float-grad"),
    "causal-scale": dict(shape=(2, 3, 5, 8), is_causal=True, scale=0.3),
    "dropout": dict(shape=(2, 3, 5, 8), dropout_p=0.3),
    "gqa": dict(shape=(2, 4, 5, 8), kv_heads=2, enable_gqa=True),
    "float64": dict(shape=(2, 3, 5, 8), dtype=torch.float64),
}


def _sdpa_run(dev: str, shape, grad=True, mask=None, v_dim=None, kv_heads=None, dtype=torch.float32, **kw):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(shape, generator=g, dtype=dtype)
    kv_shape = (*shape[:-3], kv_heads, *shape[-2:]) if kv_heads else shape
    k = torch.randn(kv_shape, generator=g, dtype=dtype)
    v = torch.randn((*kv_shape[:-1], v_dim or shape[-1]), generator=g, dtype=dtype)
    m = {
        None: None,
        "bool": torch.rand(5, 5, generator=g) > 0.3,
        "bool4": torch.rand(2, 1, 5, 5, generator=g) > 0.3,
        "float-t": torch.randn(5, 5, generator=g, dtype=dtype).t(),
        "float-grad": torch.randn(5, 5, generator=g, dtype=dtype),
    }[mask]
    q, k, v = (t.to(dev).requires_grad_(grad) for t in (q, k, v))
    m = None if m is None else m.to(dev).requires_grad_(mask == "float-grad")
    torch.manual_seed(5)
    if dev == "neuron":
        torch.neuron.set_rng_state(torch.get_rng_state())  # dropout: the CPU's stream
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    if not grad:
        return [out.cpu()]
    wrt = (q, k, v) + ((m,) if m is not None and m.requires_grad else ())
    return [out.detach().cpu(), *(t.cpu() for t in torch.autograd.grad(out.square().sum(), wrt))]


@pytest.mark.parametrize("case", sorted(SDPA_CASES))
def test_sdpa_is_the_cpus_bitwise_for_each_kind_of_input(case: str) -> None:
    cpu, neuron = (_sdpa_run(dev, **SDPA_CASES[case]) for dev in ("cpu", "neuron"))
    assert len(cpu) == len(neuron)
    assert all(torch.equal(a, b) for a, b in zip(cpu, neuron, strict=True))


def test_sgn_backward_gives_zero_gradients_on_neuron() -> None:
    x = torch.randn(3, device="neuron", requires_grad=True)
    torch.sgn(x).sum().backward()
    assert x.grad.device.type == "neuron"
    assert torch.equal(x.grad.cpu(), torch.zeros(3))
    z = torch._efficientzerotensor(2, 3, device="neuron")
    assert z.device.type == "neuron" and torch.equal(z.cpu(), torch.zeros(2, 3))


def test_mish_backward_and_channel_shuffle_use_the_cpu_kernels() -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 6, 5, 5) * 3
    _assert_bitwise(_both(F.mish, x))
    _assert_bitwise(_both(lambda t: torch.native_channel_shuffle(t, 3), x, grad=False))
    g = torch.randn_like(x)
    cpu = torch.ops.aten.mish_backward(g, x)
    assert torch.equal(cpu, torch.ops.aten.mish_backward(g.to("neuron"), x.to("neuron")).cpu())


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(3, 3, device="neuron").to_sparse(),
        lambda: torch.randn(3, 3, device="neuron").to_sparse_csr(),
        lambda: torch.eye(3).to_sparse().to("neuron"),
        lambda: torch.eye(3).to_sparse_csr().to("neuron").to_dense(),
        lambda: torch.sparse_coo_tensor(torch.tensor([[0], [1]]), torch.ones(1), (2, 2), device="neuron"),
        lambda: nn.Embedding(5, 3, sparse=True).to("neuron")(torch.tensor([1, 2], device="neuron")).sum().backward(),
    ],
    ids=["to_sparse", "to_sparse_csr", "coo_to_neuron", "csr_to_neuron", "sparse_coo_tensor", "embedding_sparse_grad"],
)
def test_sparse_tensors_raise_the_emulator_error_saying_why(make) -> None:
    """TorchNeuron's documentation says nothing about sparse layouts: refused, and the error says so."""
    from accel_neuron.emulator import EmulatorError

    with pytest.raises(
        EmulatorError,
        match=r"sparse.* tensor on the neuron device.*TorchNeuron's documentation .*does not say whether it "
        r"supports sparse.*\.to_dense\(\)",
    ):
        make()


def _two_rows(device: str = "cpu") -> list[torch.Tensor]:
    return [torch.arange(6.0, device=device).reshape(2, 3), torch.arange(9.0, device=device).reshape(3, 3)]


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.nested.as_nested_tensor(_two_rows("neuron")),
        lambda: torch.nested.nested_tensor(_two_rows(), device="neuron") + 1,
        lambda: torch.nested.nested_tensor(_two_rows()).to("neuron"),
        lambda: torch._nested_tensor_from_mask(
            torch.randn(2, 3, 4, device="neuron"), torch.ones(2, 3, dtype=torch.bool, device="neuron")
        ),
    ],
    ids=["as_nested_tensor", "op_on_one", "to_neuron", "from_mask"],
)
def test_strided_nested_tensors_raise_the_emulator_error_saying_why(make) -> None:
    """PyTorch has no NestedTensorPrivateUse1 kernels: the emulator's error names the op and the way
    out, not PyTorch's internal "NestedTensorImpl doesn't support strides" or a missing-kernel error."""
    from accel_neuron.emulator import EmulatorError

    with pytest.raises(
        EmulatorError,
        match=r"aten::\w+: a nested tensor \(torch\.nested, layout=torch\.strided\) on the neuron device.*"
        r"TorchNeuron's documentation .*does not say whether it supports them.*layout=torch\.jagged",
    ):
        make()


def test_jagged_nested_tensors_run_on_the_device_as_on_the_cpu() -> None:
    """The way out the error names: a torch.jagged nested tensor is dense tensors underneath."""
    rows = _two_rows()
    cpu = torch.nested.nested_tensor(rows, layout=torch.jagged)
    neuron = torch.nested.nested_tensor(rows, layout=torch.jagged, device="neuron")
    assert neuron.device.type == "neuron" and neuron.is_nested
    expected = (cpu * 2 + 1).relu().to_padded_tensor(0.0)
    assert torch.equal((neuron * 2 + 1).relu().to_padded_tensor(0.0).cpu(), expected)


def test_chunked_linear_cross_entropy_accumulates_like_the_cpu_in_bfloat16() -> None:
    from torch.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions

    torch.manual_seed(0)
    x, w = torch.randn(64, 16, dtype=torch.bfloat16), torch.randn(50, 16, dtype=torch.bfloat16)
    y = torch.randint(0, 50, (64,))
    opts = LinearCrossEntropyOptions()
    cpu = F.linear_cross_entropy(x, w, y, options=opts)
    neuron = F.linear_cross_entropy(x.to("neuron"), w.to("neuron"), y.to("neuron"), options=opts)
    assert torch.equal(cpu, neuron.cpu())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool, torch.complex64])
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_is_the_cpus_composite_in_one_op(dtype: torch.dtype, equal_nan: bool) -> None:
    """isclose (every assertEqual runs it) is served whole: the CPU's values, no gradient, one device op."""
    from accel_neuron.emulator import native

    torch.manual_seed(0)
    a = (torch.randn(5, 7, dtype=torch.float64) * 3).to(dtype)
    b = a.clone()
    if dtype.is_floating_point or dtype.is_complex:
        b = b + 1e-6 * torch.randn(5, 7).to(dtype)
        a[0, 0], b[0, 0], a[1, 1], b[1, 2] = float("nan"), float("nan"), float("inf"), float("-inf")
    elif dtype == torch.int64:
        b[2] += 1
    else:
        b[2] = ~b[2]
    kwargs = {"rtol": 1e-5, "atol": 1e-7, "equal_nan": equal_nan} if dtype != torch.bool else {"equal_nan": equal_nan}
    expected = torch.isclose(a, b, **kwargs)
    na, nb = a.to("neuron"), b.to("neuron")
    if dtype.is_floating_point:
        na.requires_grad_(True)
    compiled = native.hot_path() == "native"
    before = native.path_counts() if compiled else (0, 0)
    got = torch.isclose(na, nb, **kwargs)
    after = native.path_counts() if compiled else (0, 0)
    assert got.device.type == "neuron" and got.dtype == torch.bool and not got.requires_grad
    assert torch.equal(got.cpu(), expected)
    if compiled:
        assert sum(after) - sum(before) == 1  # one device op, not the composite's sixteen
