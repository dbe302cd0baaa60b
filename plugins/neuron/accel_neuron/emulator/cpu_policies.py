"""PyTorch Python defaults chosen by ``device.type``: the emulated device gets the CPU's choice.

The emulator computes with the CPU's kernels, so where PyTorch's Python code
picks a per-device policy from a table, the CPU's entry is the right one for
the emulated device (and the only one that gives CPU results bit for bit):

* ``F.linear_cross_entropy`` with chunking options resolves ``acc_policy="auto"``
  and the accumulation dtype from ``(device.type, dtype)``: float32 accumulation
  ("accurate") for bfloat16/float16 on the CPU, low-precision ("compact") for
  unlisted devices. PyTorch documents "accurate" for backends that run
  fp16/bf16 GEMMs with an fp32 upcast, which the emulator does.
"""

from __future__ import annotations

from typing import Any

import torch

_done = False


def _linear_cross_entropy() -> None:
    try:
        from torch.nn.modules import linear_cross_entropy_options as opts
    except ImportError:  # an older or newer PyTorch without the chunked path
        return
    table = getattr(opts, "_AUTO_DEFAULTS", None)
    options = getattr(opts, "LinearCrossEntropyOptions", None)
    if not isinstance(table, dict) or options is None or not hasattr(options, "_resolve_auto_acc_dtype"):
        return
    for (dev, dtype), default in list(table.items()):
        if dev == "cpu":
            table.setdefault(("neuron", dtype), default)
    original = options._resolve_auto_acc_dtype

    def _resolve_auto_acc_dtype(dtype: torch.dtype, device: torch.device | None) -> Any:
        if device is not None and device.type == "neuron":
            device = torch.device("cpu")
        return original(dtype, device)

    options._resolve_auto_acc_dtype = staticmethod(_resolve_auto_acc_dtype)


def apply() -> None:
    """Give the emulated device the CPU's entries (once)."""
    global _done
    if not _done:
        _linear_cross_entropy()
        _done = True
