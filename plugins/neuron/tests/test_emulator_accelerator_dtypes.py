"""Dtypes CUDA kernels accept and the CPU's reject are computed on the emulated device as CUDA computes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from accel_neuron.emulator import accelerator_dtypes

pytestmark = pytest.mark.usefixtures("neuron_emulator")

FOUND = Path(accelerator_dtypes.__file__).with_name("accelerator_dtypes.json")


def _counts_reference(x: torch.Tensor, bins: int, lo: int, hi: int) -> list[int]:
    """CUDA's integer binning, element by element: bin = (v - lo) * bins // (hi - lo), the top value in the last bin."""
    if lo == hi and x.numel():
        lo, hi = int(x.min()), int(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts = [0] * bins
    for v in x.tolist():
        if lo <= v <= hi:
            counts[min((v - lo) * bins // (hi - lo), bins - 1)] += 1
    return counts


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
@pytest.mark.parametrize("bins,lo,hi", [(4, 0, 0), (4, 0, 9), (3, 2, 2), (5, 1, 20), (7, 0, 6)])
def test_histc_on_integers_counts_as_cuda_in_the_input_dtype(dtype, bins, lo, hi):
    x = torch.tensor([0, 1, 2, 3, 3, 7, 9, 9, 10, 6, 6, 5], dtype=dtype)
    with pytest.raises(NotImplementedError, match="histogram"):
        torch.histc(x, bins, lo, hi)  # the CPU's kernel refuses
    got = torch.histc(x.to("neuron"), bins, lo, hi)
    assert got.dtype == dtype and got.device.type == "neuron"
    assert got.tolist() == _counts_reference(x.to(torch.int64), bins, lo, hi)


def test_moe_routing_histogram_as_transformers_computes_it():
    num_experts = 8
    selected = torch.randint(0, num_experts, (16, 2), generator=torch.Generator().manual_seed(0))
    tokens_per_expert = torch.histc(selected.to("neuron").int(), bins=num_experts, min=0, max=num_experts - 1)
    assert tokens_per_expert.dtype == torch.int32
    assert tokens_per_expert.tolist() == torch.bincount(selected.flatten(), minlength=num_experts).tolist()


def test_float_histc_is_still_the_cpus():
    x = torch.randn(100, generator=torch.Generator().manual_seed(1))
    assert torch.equal(torch.histc(x.to("neuron"), 10).cpu(), torch.histc(x, 10))


def test_abs_of_bool_is_the_identity():
    x = torch.tensor([True, False, True])
    assert torch.equal(torch.abs(x.to("neuron")).cpu(), x)


@pytest.mark.parametrize(
    "fn",
    [
        torch.sin,
        torch.exp,
        torch.sqrt,
        torch.tanh,
        torch.sigmoid,
        torch.angle,
        torch.sum,
        lambda t: t / t.conj(),
        lambda t: t.pow(2),
        lambda t: torch.lerp(t, t * 2, 0.5),
    ],
    ids=["sin", "exp", "sqrt", "tanh", "sigmoid", "angle", "sum", "div", "pow", "lerp"],
)
def test_complex32_math_is_computed_in_complex64_and_rounded(fn):
    c = torch.randn(6, dtype=torch.complex64, generator=torch.Generator().manual_seed(2)).to(torch.complex32)
    got = fn(c.to("neuron"))
    want = fn(c.to(torch.complex64)).to(got.dtype)
    assert got.dtype == (torch.float16 if fn is torch.angle else torch.complex32)
    if got.is_complex():  # the CPU compares complex32 tensors in no kernel: compare their float16 parts
        got, want = torch.view_as_real(got.cpu()), torch.view_as_real(want)
    assert torch.equal(got.cpu(), want)


def test_an_uncovered_dtype_still_raises_the_cpus_error():
    with pytest.raises(RuntimeError, match="nansum on CPU does not support complex"):
        torch.nansum(torch.ones(3, dtype=torch.complex64, device="neuron"))


def _finding() -> set[tuple[str, str]]:
    return {(e["op"], d) for e in json.loads(FOUND.read_text())["ops"] for d in e["cpu_rejects"]}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_pooling_upsampling_and_margin_losses_accumulate_in_float32(dtype):
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 4, 8, 8, generator=g)
    target = torch.randint(0, 12, (16,), generator=g)
    labels = torch.randint(-1, 12, (16, 12), generator=g)
    cases = {
        "avg_pool3d": lambda t: F.avg_pool3d(t, 2),
        "upsample_aa": lambda t: F.interpolate(t[:, :, 0], scale_factor=0.5, mode="bilinear", antialias=True),
        "multi_margin_loss": lambda t: F.multi_margin_loss(t.reshape(-1, 12)[:16], target.to(t.device)),
        "multilabel_margin_loss": lambda t: F.multilabel_margin_loss(
            t.reshape(-1, 12)[:16], labels.to(t.device)
        ),
    }
    for name, fn in cases.items():
        with pytest.raises(NotImplementedError):
            fn(x.to(dtype))  # the CPU's kernels refuse 16-bit inputs
        xd = x.to(dtype).to("neuron").requires_grad_()
        got = fn(xd)
        got.sum().backward()
        xc = x.to(dtype).float().requires_grad_()
        want = fn(xc)
        want.sum().backward()
        assert got.dtype == dtype and xd.grad.dtype == dtype, name
        assert torch.equal(got.detach().cpu(), want.detach().to(dtype)), name
        assert torch.equal(xd.grad.cpu(), xc.grad.to(dtype)), name


def test_trace_of_a_bool_matrix_is_an_int64_count():
    m = torch.tensor([[True, False], [True, True]])
    got = torch.trace(m.to("neuron"))
    assert got.dtype == torch.int64 and got.item() == 2


def test_the_covered_cases_are_in_the_committed_opinfo_finding():
    found = _finding()
    for dtype in ("int8", "int16", "int32", "int64", "uint8"):
        assert ("histc", dtype) in found
    assert ("abs", "bool") in found and ("trace", "bool") in found
    covered = {name for name, (narrow, _) in accelerator_dtypes.WIDENED.items() if torch.complex32 in narrow}
    for name in covered - {"div", "pow", "lerp", "prod", "true_divide"}:
        assert (name, "complex32") in found, name
    for op in ("nn.functional.avg_pool3d", "nn.functional.multi_margin_loss", "_upsample_bilinear2d_aa"):
        assert {(op, "float16"), (op, "bfloat16")} <= found, op
