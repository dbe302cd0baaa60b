"""Autocast on the neuron device: a fallthrough for every op plus a cast policy per op.

PyTorch 2.13 registers nothing at ``AutocastPrivateUse1``. Here every op falls
through unless it is on one of three lists modelled on CUDA's autocast lists:

* lower precision: matmul-like and convolution ops run in the autocast dtype;
* fp32: ops that lose too much precision (exp, log, norms, losses, softmax,
  sums...) run in float32;
* promote: ops with several floating inputs run in the widest of their dtypes.

Only floating-point tensors on the neuron device are cast (float64 is left
alone), as CUDA does. The neuron autocast dtype is set to bfloat16, the
native training type. Unlike CUDA there is no cast cache: a weight used twice
under autocast is cast twice (same numbers, more work).
"""

from __future__ import annotations

import threading
from typing import Any

import torch

_KEY = torch._C.DispatchKey.AutocastPrivateUse1
_EXCLUDE = torch._C.DispatchKeySet(_KEY)

LOWER_PRECISION = (
    "_convolution",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d.input",
    "conv_transpose3d.input",
    "convolution",
    "prelu",
    "addmm",
    "addmv",
    "addr",
    "matmul",
    "einsum",
    "mm",
    "mv",
    "linalg_vecdot",
    "linear",
    "addbmm",
    "baddbmm",
    "bmm",
    "chain_matmul",
    "linalg_multi_dot",
    "_thnn_fused_lstm_cell",
    "_thnn_fused_gru_cell",
    "lstm_cell",
    "gru_cell",
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "scaled_dot_product_attention",
)
FP32 = (
    "acos",
    "asin",
    "cosh",
    "erfinv",
    "exp",
    "expm1",
    "log",
    "log10",
    "log2",
    "log1p",
    "reciprocal",
    "rsqrt",
    "sinh",
    "tan",
    "pow.Tensor_Scalar",
    "pow.Tensor_Tensor",
    "pow.Scalar",
    "softplus",
    "layer_norm",
    "native_layer_norm",
    "group_norm",
    "frobenius_norm.dim",
    "nuclear_norm",
    "nuclear_norm.dim",
    "cosine_similarity",
    "poisson_nll_loss",
    "cosine_embedding_loss",
    "nll_loss",
    "nll_loss2d",
    "hinge_embedding_loss",
    "kl_div",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "mse_loss",
    "margin_ranking_loss",
    "multilabel_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "multi_margin_loss",
    "binary_cross_entropy_with_logits",
    "dist",
    "pdist",
    "cdist",
    "renorm",
    "logsumexp",
    "upsample_nearest1d",
    "upsample_nearest2d",
    "upsample_nearest3d",
    "upsample_linear1d",
    "upsample_bilinear2d",
    "upsample_trilinear3d",
    "upsample_bicubic2d",
    # ops CUDA runs in fp32 by setting their output dtype
    "prod",
    "prod.dim_int",
    "softmax.int",
    "log_softmax.int",
    "cumprod",
    "cumsum",
    "linalg_vector_norm",
    "norm.Scalar",
    "norm.ScalarOpt_dim",
    "sum",
    "sum.dim_IntList",
    "cross_entropy_loss",
)
PROMOTE = (
    "addcdiv",
    "addcmul",
    "atan2",
    "bilinear",
    "cross",
    "dot",
    "vdot",
    "grid_sampler",
    "index_put",
    "scatter_add",
    "tensordot",
    "stack",
    "cat",
)

_LOW = (torch.float16, torch.bfloat16)


def _eligible(t: Any) -> bool:
    return (
        isinstance(t, torch.Tensor)
        and t.is_floating_point()
        and t.dtype is not torch.float64
        and not t.is_cpu
        and t.device.type == "neuron"
    )


def _cast(value: Any, dtype: torch.dtype, only_low: bool) -> Any:
    if _eligible(value):
        if value.dtype is dtype or (only_low and value.dtype not in _LOW):
            return value
        return value.to(dtype)
    if isinstance(value, (list, tuple)) and value and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_cast(v, dtype, only_low) for v in value)
    return value


def _widest(args: tuple, kwargs: dict) -> torch.dtype | None:
    widest = None
    for v in (*args, *kwargs.values()):
        items = v if isinstance(v, (list, tuple)) else (v,)
        for t in items:
            if _eligible(t):
                if (
                    widest is None
                    or (widest in _LOW and t.dtype not in _LOW)
                    or (widest is torch.float16 and t.dtype is torch.bfloat16)
                ):
                    widest = t.dtype if widest is None or t.dtype not in _LOW else torch.float32
    return widest


def _kernel(op: Any, policy: str):
    def kernel(*args: Any, **kwargs: Any) -> Any:
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            if policy == "lower":
                dtype = _original_get(_DEVICE)  # set by torch.autocast.__enter__ in this thread
                args = tuple(_cast(a, dtype, False) for a in args)
                kwargs = {k: _cast(v, dtype, False) for k, v in kwargs.items()}
            elif policy == "fp32":
                args = tuple(_cast(a, torch.float32, True) for a in args)
                kwargs = {k: _cast(v, torch.float32, True) for k, v in kwargs.items()}
            else:
                dtype = _widest(args, kwargs)
                if dtype is not None:
                    args = tuple(_cast(a, dtype, False) for a in args)
                    kwargs = {k: _cast(v, dtype, False) for k, v in kwargs.items()}
            return op(*args, **kwargs)

    return kernel


def _overloads(name: str) -> list[Any]:
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return []
    if overload:
        return [getattr(packet, overload)] if overload in packet.overloads() else []
    names = packet.overloads()
    # A bare name means every overload except out= variants.
    return [getattr(packet, o) for o in names if not o.endswith("out")]


def policy_of(op_name: str) -> str | None:
    """'lower', 'fp32', 'promote' or None (no cast) for an aten op name like 'mm' or 'pow.Scalar'."""
    for policy, names in (("lower", LOWER_PRECISION), ("fp32", FP32), ("promote", PROMOTE)):
        if op_name in names or op_name.split(".")[0] in names:
            return policy
    return None


_thread = threading.local()


def _ensure_thread_default() -> None:
    if not getattr(_thread, "ready", False):
        _thread.ready = True
        _original_set(_DEVICE, torch.bfloat16)


_DEVICE = "neuron"
_original_get = torch.get_autocast_dtype
_original_set = torch.set_autocast_dtype


def get_autocast_dtype(device_type: str) -> torch.dtype:
    """``torch.get_autocast_dtype``, with bfloat16 as the neuron default in every thread."""
    if device_type == _DEVICE:
        _ensure_thread_default()
    return _original_get(device_type)


def set_autocast_dtype(device_type: str, dtype: torch.dtype) -> None:
    """``torch.set_autocast_dtype``; an explicit neuron dtype replaces the bfloat16 default."""
    if device_type == _DEVICE:
        _thread.ready = True
    _original_set(device_type, dtype)


def register() -> list[torch.library.Library]:
    """Install the fallthrough, the per-op policy kernels, and bfloat16 as the neuron autocast dtype."""
    fall = torch.library.Library("_", "IMPL")
    fall.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    lib = torch.library.Library("aten", "IMPL")
    done: set[str] = set()
    for policy, names in (("lower", LOWER_PRECISION), ("fp32", FP32), ("promote", PROMOTE)):
        for name in names:
            for op in _overloads(name):
                overload = op._overloadname
                qual = op._schema.name.split("::", 1)[1] + ("" if overload == "default" else f".{overload}")
                if qual in done:
                    continue
                done.add(qual)
                lib.impl(qual, _kernel(op, policy), "AutocastPrivateUse1")
    torch.get_autocast_dtype = get_autocast_dtype
    torch.set_autocast_dtype = set_autocast_dtype
    _ensure_thread_default()
    return [fall, lib]
