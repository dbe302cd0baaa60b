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

The per-op kernel (``fallback.py``) asks :func:`computed` only when the CPU kernel raised
``NotImplementedError``: the common path pays nothing.
"""

from __future__ import annotations

from typing import Any

import torch

from . import storage

_INT_DTYPES = frozenset({torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64})

#: ops (by overload packet) whose complex32 inputs are computed in complex64 and rounded back
COMPLEX32_OPS: frozenset[str] = frozenset(
    {
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
    }
)


def histc_int(self: torch.Tensor, bins: int = 100, min: Any = 0, max: Any = 0) -> torch.Tensor:  # noqa: A002
    """``torch.histc`` of an integer neuron tensor, binned as CUDA bins it (counts in the input dtype)."""
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins}")
    x = storage.cpu_view(self).reshape(-1).to(torch.int64)
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
    return storage.to_neuron(counts, self.get_device())


def _meta(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="meta")
    return a


def _widened(op: Any, narrow: torch.dtype, wide: torch.dtype, args: tuple, kwargs: dict) -> Any:
    """Run `op` with `narrow` tensors in `wide`, rounded to the result dtype PyTorch's meta kernel gives."""

    def widen(a: Any) -> Any:
        return a.to(wide) if isinstance(a, torch.Tensor) and a.dtype == narrow else a

    expected = op(*[_meta(a) for a in args], **{k: _meta(v) for k, v in kwargs.items()})
    out = op(*[widen(a) for a in args], **{k: widen(v) for k, v in kwargs.items()})
    return out.to(expected.dtype)


def computed(op: Any, args: tuple, kwargs: dict) -> Any:
    """`op` on neuron arguments the CPU kernel rejected, computed as CUDA computes it; ``None`` if not covered."""
    name = op._schema.name.split("::", 1)[1]
    first = args[0] if args else None
    if not isinstance(first, torch.Tensor) or op._schema.returns[0].alias_info is not None:
        return None  # in-place and out= forms are not covered
    if name == "histc" and first.dtype in _INT_DTYPES:
        return histc_int(*args, **kwargs)
    if name == "abs" and first.dtype == torch.bool:
        return first.clone()
    if name in COMPLEX32_OPS and any(
        isinstance(a, torch.Tensor) and a.dtype == torch.complex32 for a in (*args, *kwargs.values())
    ):
        return _widened(op, torch.complex32, torch.complex64, args, kwargs)
    return None
