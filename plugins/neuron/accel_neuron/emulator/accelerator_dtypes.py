"""Dtypes that CUDA kernels accept and the CPU's reject, computed on the emulated device as CUDA does.

Library code chooses dtypes by device: on anything but the CPU it may pick one only
accelerator kernels accept (transformers' mixture-of-experts routing calls ``torch.histc``
on int32 counts). The emulator runs CPU kernels, so without this module such a call fails
with the CPU's "not implemented for 'Int'". The ops and dtypes come from PyTorch's OpInfo
database (``plugins/neuron/tools/find_accelerator_dtypes.py``, result in
``accelerator_dtypes.json``); this module covers:

* ``histc`` on integer tensors: CUDA bins in the input's integer arithmetic and returns
  counts in the input dtype; computed here exactly in int64.
* ``abs`` on bool: the identity, as CUDA's kernel returns.
* complex32 (``torch.chalf``) elementwise math and reductions: CUDA computes them in
  complex64 (its "opmath" type) and rounds the result to complex32; the emulator computes
  the CPU's complex64 kernel and rounds the same way. The result dtype is the one PyTorch's
  meta kernel gives (``angle`` of complex32 is float16).
* float16/bfloat16 ``avg_pool3d``, antialiased bilinear upsampling, ``multi_margin_loss``
  and ``multilabel_margin_loss`` (forward and backward): CUDA accumulates in float32 and
  rounds to the input dtype; so does the emulator, with the CPU's float32 kernel.
* ``trace`` of a bool matrix: an int64 count, as CUDA's.

The per-op kernel (``fallback.py``) asks :func:`computed` only when the CPU kernel raised
``NotImplementedError``: the common path pays nothing.
"""

from __future__ import annotations

from typing import Any

import torch

from . import storage

_INT_DTYPES = frozenset({torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64})

_COMPLEX32_OPS = (
    "acos",
    "acosh",
    "angle",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cos",
    "cosh",
    "div",
    "exp",
    "lerp",
    "log",
    "logaddexp",
    "pow",
    "prod",
    "rsqrt",
    "sigmoid",
    "sin",
    "sinh",
    "sqrt",
    "sum",
    "tan",
    "tanh",
    "true_divide",
)
# CUDA's kernels accumulate these in float32 (their accscalar_t) and round to the 16-bit input dtype.
_HALF_OPS = (
    "avg_pool3d",
    "avg_pool3d_backward",
    "_upsample_bilinear2d_aa",
    "_upsample_bilinear2d_aa_backward",
    "multi_margin_loss",
    "multi_margin_loss_backward",
    "multilabel_margin_loss_forward",
    "multilabel_margin_loss_backward",
)
_HALF = frozenset({torch.float16, torch.bfloat16})

#: op (overload packet) -> (dtypes the CPU kernel rejects, the dtype computed in); results are
#: rounded to the dtype PyTorch's meta kernel gives for the original inputs
WIDENED: dict[str, tuple[frozenset[torch.dtype], torch.dtype]] = {
    **{name: (frozenset({torch.complex32}), torch.complex64) for name in _COMPLEX32_OPS},
    **{name: (_HALF, torch.float32) for name in _HALF_OPS},
    "trace": (frozenset({torch.bool}), torch.int64),  # CUDA sums bools as int64
}


def histc_int(self: torch.Tensor, bins: int = 100, min: Any = 0, max: Any = 0) -> torch.Tensor:  # noqa: A002
    """``torch.histc`` of an integer neuron tensor, binned as CUDA bins it (counts in the input dtype)."""
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins}")
    x = storage.active().cpu_view(self).reshape(-1).to(torch.int64)
    lo, hi = int(min), int(max)  # CUDA converts the bounds to the input's integer type
    if lo == hi and x.numel() > 0:
        lo, hi = int(x.min()), int(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    inside = x[(x >= lo) & (x <= hi)]
    b = torch.div((inside - lo) * bins, hi - lo, rounding_mode="floor")  # CUDA's integer getBin
    b = torch.where(b == bins, b - 1, b)
    counts = torch.bincount(b, minlength=bins)[:bins].to(self.dtype)
    return storage.active().to_neuron(counts, self.get_device())


def _meta(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="meta")
    return a


def _widened(op: Any, narrow: frozenset[torch.dtype], wide: torch.dtype, args: tuple, kwargs: dict) -> Any:
    """Run `op` with `narrow` tensors in `wide`, rounded to the result dtypes PyTorch's meta kernel gives."""

    def widen(a: Any) -> Any:
        return a.to(wide) if isinstance(a, torch.Tensor) and a.dtype in narrow else a

    out = op(*[widen(a) for a in args], **{k: widen(v) for k, v in kwargs.items()})
    try:
        expected = op(*[_meta(a) for a in args], **{k: _meta(v) for k, v in kwargs.items()})
        dtypes = [expected.dtype] if isinstance(expected, torch.Tensor) else [e.dtype for e in expected]
    except NotImplementedError:  # no meta kernel: results computed in `wide` return in the input's dtype
        given = next(
            a.dtype for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.dtype in narrow
        )
        outs = [out] if isinstance(out, torch.Tensor) else list(out)
        dtypes = [given if o.dtype == wide else o.dtype for o in outs]
    if isinstance(out, torch.Tensor):
        return out.to(dtypes[0])
    return type(out)(o.to(d) for o, d in zip(out, dtypes, strict=True))


def computed(op: Any, args: tuple, kwargs: dict) -> Any:
    """`op` on neuron arguments the CPU kernel rejected, computed as CUDA computes it; ``None`` if not covered."""
    name = op._schema.name.split("::", 1)[1]
    first = args[0] if args else None
    if not isinstance(first, torch.Tensor) or any(r.alias_info is not None for r in op._schema.returns):
        return None  # in-place and out= forms are not covered
    if name == "histc" and first.dtype in _INT_DTYPES:
        return histc_int(*args, **kwargs)
    if name == "abs" and first.dtype == torch.bool:
        return first.clone()
    widened = WIDENED.get(name)
    if widened is not None and any(
        isinstance(a, torch.Tensor) and a.dtype in widened[0] for a in (*args, *kwargs.values())
    ):
        return _widened(op, widened[0], widened[1], args, kwargs)
    return None
