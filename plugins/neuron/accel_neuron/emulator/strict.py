"""The strict setting: the emulated device refuses what TorchNeuron does not run on Trainium.

By default the emulator runs every operator the CPU runs. With ``ACCEL_NEURON_STRICT=1``
(``[tool.accel.neuron] strict = true``) each operator of the Trainium table
(:mod:`accel_neuron.trainium_ops`, ``N`` and ``CPU_FALLBACK`` rows) raises
:class:`TrainiumStrictError` on a neuron tensor, naming the operator, the documented status and
its source: CI then fails where the instance would refuse the code (``N``) or silently run it on
the host (``CPU_FALLBACK``), as Ascend's ``TORCH_NPU_FALLBACK_CPU_DISABLE=1`` does for NPUs.

One hook, installed once with the device (:func:`install`): a kernel per listed operator on the
device's dispatch key, registered after the emulator's own, so it wins over the generic kernel,
the compiled per-op path and any explicit emulator kernel alike. Operators whose composite
kernel runs above the device key (``CompositeImplicitAutograd``) get it on the device's autograd
key instead, before they decompose.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import torch

from ..trainium_ops import STATUSES, TrainiumOp
from .errors import EmulatorError

__all__ = ["TrainiumStrictError", "install", "refused"]

_libs: list[torch.library.Library] = []  # kept alive: dropping a Library unregisters its kernels
_refused: dict[str, TrainiumOp] = {}


class TrainiumStrictError(EmulatorError):
    """An operator that TorchNeuron documents as ``N`` or ``CPU_FALLBACK`` ran on the emulated device in strict mode.

    ``op`` is the ATen operator, ``row`` the table row (status, source, release, file and line).
    """

    def __init__(self, row: TrainiumOp, setting: str) -> None:
        super().__init__(
            f"{row.op} on the neuron device: {STATUSES[row.status]} ({row.status}: {row.detail}; "
            f"{row.source}, {row.release}; table row {row.where}). The emulator refuses it because "
            f"strict mode is on ({setting}); run it on the CPU explicitly (tensor.cpu()) or turn strict "
            "mode off to let the emulator compute it."
        )
        self.op = row.op
        self.row = row


def refused() -> dict[str, TrainiumOp]:
    """The operators this process refuses (empty unless strict mode is installed)."""
    return dict(_refused)


def _overloads(qualname: str) -> list[Any]:
    packet = getattr(torch.ops.aten, qualname.split("::", 1)[1], None)
    if packet is None:
        return []  # an operator this torch release does not have
    return [getattr(packet, name) for name in packet.overloads()]


def install(rows: Iterable[TrainiumOp], setting: str, device_key: str = "PrivateUse1") -> None:
    """Refuse every operator of ``rows`` on ``device_key`` (once per process; ``setting`` says where strict came from)."""
    if _libs:
        return
    lib = torch.library.Library("aten", "IMPL")
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    for row in rows:
        for overload in _overloads(row.op):
            schema = overload._schema
            name = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
            try:
                composite = has(name, "CompositeImplicitAutograd")
            except RuntimeError:  # a TorchScript-only overload (dequantize.tensor): never dispatched
                continue
            key = f"Autograd{device_key}" if composite else device_key

            def refuse(*args: Any, _row: TrainiumOp = row, **kwargs: Any) -> Any:
                raise TrainiumStrictError(_row, setting)

            with warnings.catch_warnings():  # replacing the emulator's kernel on purpose: not news
                warnings.simplefilter("ignore", UserWarning)
                lib.impl(name.split("::", 1)[1], refuse, key)
        _refused[row.op] = row
    _libs.append(lib)
