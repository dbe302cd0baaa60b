"""Whether a device names the selected accelerator: the portable form of ``device.type == "cuda"``.

A test such as ``x.device.type == "cuda"``, ``name.startswith("cuda")`` or ``"cuda" in
str(device)`` is true on the machine it was written for exactly where the device is the
accelerator. :func:`is_accelerator_device` asks that of the selected backend: true for
``"neuron:0"`` on neuron, ``torch.device("cuda", 1)`` on cuda; false on the cpu backend (no
accelerator) and for ``cpu``, ``meta``, ``mps``, ``xpu`` or any other device type than the
selected one. ``accel port`` rewrites such tests to it (rule ACC113); ``"cpu" not in name``
would take ``meta`` and ``mps`` for the accelerator.
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_accelerator_device"]


def _type_of(device: Any) -> str:
    kind = getattr(device, "type", None)  # torch.device, or a tensor's .device
    if isinstance(kind, str):
        return kind
    return str(device).partition(":")[0].strip()


def is_accelerator_device(device: Any) -> bool:
    """Whether ``device`` (a ``torch.device``, ``"neuron:0"``, a device type such as ``"cuda"``) is the selected accelerator.

    False on a backend that is no accelerator (cpu), and for any device of another type.
    """
    import accel_abstraction as accel

    return accel.is_accelerator_available() and _type_of(device) == accel.device_type()
