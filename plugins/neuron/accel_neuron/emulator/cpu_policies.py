"""PyTorch Python defaults chosen by ``device.type``: the emulated device gets the CPU's choice.

The emulator computes with the CPU's kernels, so where PyTorch's Python code
picks a per-device policy from a table, the CPU's entry is the right one for
the emulated device (and the only one that gives CPU results bit for bit):

* ``F.linear_cross_entropy`` with chunking options resolves ``acc_policy="auto"``
  and the accumulation dtype from ``(device.type, dtype)`` (a table up to torch 2.13,
  ``_auto_acc_policy`` from 2.14: whichever is there is given the CPU's answer): float32
  accumulation ("accurate") for bfloat16/float16 on the CPU, low-precision ("compact") for
  other devices. PyTorch documents "accurate" for backends that run
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
    options = getattr(opts, "LinearCrossEntropyOptions", None)
    if options is None or not hasattr(options, "_resolve_auto_acc_dtype"):
        return
    # The "auto" acc_policy: a (device type, dtype) table up to torch 2.13, a function from 2.14.
    table = getattr(opts, "_AUTO_DEFAULTS", None)
    if isinstance(table, dict):
        for (dev, dtype), default in list(table.items()):
            if dev == "cpu":
                table.setdefault(("neuron", dtype), default)
    pick = getattr(opts, "_auto_acc_policy", None)
    if callable(pick):

        def _auto_acc_policy(device_type: str | None, dtype: torch.dtype) -> Any:
            return pick("cpu" if device_type == "neuron" else device_type, dtype)

        opts._auto_acc_policy = _auto_acc_policy
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
