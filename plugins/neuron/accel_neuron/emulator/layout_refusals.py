"""The refusals of sparse, nested and quantized tensors on the emulated device (errors and their fallbacks)."""

from __future__ import annotations

from typing import Any

import torch

_Tensor = torch.Tensor


def quantized_limit(op_name: str) -> Exception:
    """The error for a quantized tensor on the neuron device (TorchNeuron does not support them)."""
    from .errors import unsupported

    return unsupported(
        op_name,
        "a quantized tensor (quantize_per_tensor, quantize_per_channel, empty quantized tensors and the "
        "quantized operator variants)",
        "Quantize on the CPU, or keep the model in float32/bfloat16 on neuron.",
    )


def sparse_limit(op_name: str, layout: Any) -> Exception:
    """The error for a sparse tensor on the neuron device."""
    from .errors import limit

    return limit(
        f"{op_name}: a {layout} tensor on the neuron device",
        "The emulated device holds dense (torch.strided) tensors only, and TorchNeuron's documentation "
        "(AWS Neuron 2.33, 'Supported PyTorch APIs and operators') does not say whether it supports sparse "
        "layouts, so the emulator refuses them rather than accept what the device may not: keep sparse "
        "tensors on the CPU (nn.Embedding(sparse=False), an optimizer other than SparseAdam), or call "
        ".to_dense() before moving them to neuron.",
    )


def nested_limit(op_name: str) -> Exception:
    """The error for a nested tensor of the strided kind (a NestedTensorImpl) on the neuron device."""
    from .errors import limit

    return limit(
        f"{op_name}: a nested tensor (torch.nested, layout=torch.strided) on the neuron device",
        "PyTorch has no kernels for nested tensors on a PrivateUse1 device and the emulator adds none; "
        "TorchNeuron's documentation (AWS Neuron 2.33, 'Supported PyTorch APIs and operators') does not say "
        "whether it supports them. Make them with layout=torch.jagged (a nested tensor over dense tensors, "
        "whose ops run as dense ops on the device), pad them on the CPU (to_padded_tensor) before moving "
        "them to neuron, or keep them on the CPU.",
    )


def sparse_fallback_kernel(op: Any, *args: Any, **kwargs: Any) -> Any:
    """The SparsePrivateUse1 / SparseCsrPrivateUse1 fallback: a clear error naming the limit."""
    layout = next(
        (
            x.layout
            for x in torch.utils._pytree.tree_leaves((args, kwargs))
            if isinstance(x, _Tensor) and x.layout != torch.strided
        ),
        "sparse",
    )
    raise sparse_limit(op._schema.name, layout)


def nested_fallback_kernel(op: Any, *args: Any, **kwargs: Any) -> Any:
    """The NestedTensorPrivateUse1 fallback: a clear error naming the limit."""
    raise nested_limit(op._schema.name)


def quantized_fallback_kernel(op: Any, *args: Any, **kwargs: Any) -> Any:
    """The QuantizedPrivateUse1 fallback (empty quantized tensors on neuron, quantized copies to it)."""
    raise quantized_limit(op._schema.name)
