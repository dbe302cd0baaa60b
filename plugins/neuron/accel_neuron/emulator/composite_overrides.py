"""Kernels for composite ops whose decomposition depends on the device.

Some CompositeImplicitAutograd ops choose their decomposition by device:
``dropout`` takes the fused ``native_dropout`` on PrivateUse1 but
``bernoulli_``/``div_``/``mul`` on the CPU, and ``scaled_dot_product_attention``
takes the math path on PrivateUse1 but the CPU flash kernel on the CPU. To
give bitwise CPU results, these are registered at AutogradPrivateUse1 with
the decomposition the CPU would run (autograd then records the sub-ops). On the compiled per-op
path neither is Python: dropout has C++ kernels (``csrc/dropout.cpp``), and SDPA runs ATen's own
composite, whose backend chooser gets a neuron entry answering what the CPU's answers
(``csrc/sdpa.cpp``); the Python kernels here serve the Python per-op path.

Others have a dedicated CPU kernel next to their composite one
(``mish_backward``, ``native_channel_shuffle``): the composite would win on
PrivateUse1, so they get the generic CPU-view kernel explicitly. The
recurrent layers run as CPU autograd islands (:mod:`.cpu_islands`).
``_efficientzerotensor`` (the zero gradients autograd hands out, e.g. by
``sgn``'s backward) has only per-device kernels; on neuron it is a
materialized zero tensor (values equal; ``_is_zerotensor()`` is False).

A few non-differentiable composites that decompose into many small ops (:data:`WHOLE_ON_DEVICE`:
``isclose``, 16 ops, which every ``assertEqual``/``assert_close`` of a float tensor runs) get the
generic kernel too: the CPU's composite runs once on CPU views (the same sub-ops on the same values,
so the same result) instead of each sub-op paying the device's per-op cost; their temporaries are
host memory, not counted as device memory.
"""

from __future__ import annotations

from typing import Any

import torch

from . import cpu_islands, cpu_policies, kernel_keys, layout_refusals
from .compile import sdp_choice

aten = torch.ops.aten


def _dropout_into(input: torch.Tensor, p: float, train: bool, in_place: bool) -> torch.Tensor:
    # The CPU path of aten::dropout (not the fused kernel): noise.bernoulli_(1-p).div_(1-p) * input.
    # Twin: csrc/dropout.cpp, the compiled path's kernels (this one serves the Python per-op path, the
    # path without a compiler): the same sub-ops in the same order, so the same random stream;
    # test_emulator_hot_path.py's test_compiled_dropout_draws_the_python_kernels_stream_bitwise runs both.
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        factor = torch.zeros((), dtype=input.dtype, device=input.device)
    else:
        factor = torch.empty_like(input)
        factor.bernoulli_(1 - p)
        factor.div_(1 - p)
    return input.mul_(factor) if in_place else input * factor


def _dropout(input: torch.Tensor, p: float, train: bool) -> torch.Tensor:
    return _dropout_into(input, p, train, in_place=False)


def _dropout_(input: torch.Tensor, p: float, train: bool) -> torch.Tensor:
    return _dropout_into(input, p, train, in_place=True)


_FLASH = 1  # sdp::SDPBackend::flash_attention


def _bool_mask_to_additive(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    if mask is None or mask.dtype != torch.bool:
        return mask
    zero = torch.zeros((), dtype=dtype, device=mask.device)
    return torch.where(mask.logical_not(), float("-inf"), zero)


def _sdpa(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    # What the CPU runs: ask the CPU backend chooser, then call the CPU flash kernel or the math path.
    # The Python per-op path's kernel; twin: csrc/sdpa.cpp (the compiled path: ATen's composite).
    # (sdp_choice: the CPU's answer, with the CPU's requires_grad flags, also while torch.compile traces)
    choice = sdp_choice(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    mask = _bool_mask_to_additive(attn_mask, query.dtype)
    if choice == _FLASH:
        if query.dim() == 3:
            # From torch 2.15 the CPU chooser also picks flash for unbatched (3-dim) inputs; its
            # kernel takes 4 dims, so the CPU runs it on a batch of one (bitwise the same here).
            q, k, v = (t.unsqueeze(0) if t.dim() == 3 else t for t in (query, key, value))
            m = mask.unsqueeze(0) if mask is not None and mask.dim() == 3 else mask
            return aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, dropout_p, is_causal, attn_mask=m, scale=scale
            )[0].squeeze(0)
        return aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, dropout_p, is_causal, attn_mask=mask, scale=scale
        )[0]
    return aten._scaled_dot_product_attention_math(
        query, key, value, mask, dropout_p, is_causal, None, scale=scale, enable_gqa=enable_gqa
    )[0]


def _efficientzerotensor(
    size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None
) -> torch.Tensor:
    return torch.zeros(size, dtype=dtype, layout=layout, device=device)


#: Non-differentiable CompositeImplicitAutograd ops served whole by the generic kernel (the CPU's
#: composite on CPU views). Only ops without a derivative: with a PrivateUse1 kernel their autograd key
#: takes PyTorch's autograd fallback, which attaches nothing to non-differentiable (bool) outputs.
WHOLE_ON_DEVICE = ("isclose",)


def dedicated_cpu_kernel_ops() -> list[str]:
    """Ops with both a CompositeImplicitAutograd kernel and a CPU kernel, and none for neuron yet."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    names = torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd")
    return sorted(n for n in names if n.startswith("aten::") and has(n, "CPU") and not has(n, "PrivateUse1"))


def register(lib: torch.library.Library, compiled: bool = False) -> None:
    """Register the CPU-shaped kernels in `lib` (an aten IMPL library).

    `compiled`: the compiled per-op path is on; dropout then takes the C++ core's kernels
    (``csrc/dropout.cpp``: the same ops in the same order as :func:`_dropout_into`, so the same
    random stream) instead of these Python ones, and SDPA ATen's composite with the CPU's kernel
    choice (``csrc/sdpa.cpp``: ~11 us a tiny call against :func:`_sdpa`'s ~48, the CPU's ~8).
    """
    if compiled:
        from . import native

        native.enable_native_dropout()
        # ATen's C++ composite with the CPU's kernel choice (csrc/sdpa.cpp): no Python in the call.
        native.enable_native_sdpa()
    else:
        lib.impl("dropout", _dropout, "AutogradPrivateUse1")
        lib.impl("dropout_", _dropout_, "AutogradPrivateUse1")
        lib.impl("scaled_dot_product_attention", _sdpa, "AutogradPrivateUse1")
    lib.impl("_efficientzerotensor", _efficientzerotensor, "PrivateUse1")
    for qualname in dedicated_cpu_kernel_ops() + [f"aten::{n}" for n in WHOLE_ON_DEVICE]:
        name = qualname.split("::", 1)[1]
        base, _, overload = name.partition(".")
        op = getattr(getattr(aten, base), overload or "default")
        kernel_keys.register_generic(lib, name, op)
    cpu_islands.register(lib, compiled)
    _register_refusals()
    cpu_policies.apply()


_refusal_libs: list[torch.library.Library] = []  # kept alive: dropping a Library unregisters it


def _register_refusals() -> None:
    """Make sparse, nested and quantized ops on neuron raise the emulator's error, not a missing-kernel one."""
    lib = torch.library.Library("_", "IMPL")
    for key in ("SparsePrivateUse1", "SparseCsrPrivateUse1"):
        lib.fallback(layout_refusals.sparse_fallback_kernel, key)
    lib.fallback(layout_refusals.nested_fallback_kernel, "NestedTensorPrivateUse1")
    lib.fallback(layout_refusals.quantized_fallback_kernel, "QuantizedPrivateUse1")
    _refusal_libs.append(lib)
