"""``torch.cuda.get_device_properties(i)`` and ``get_device_capability()`` answered for the selected backend.

Real scripts read a few fields of the properties (``name``, ``total_memory``,
``multi_processor_count``, ``major``/``minor``) to log the hardware or size a batch, and
compare the compute capability to pick bfloat16, TF32 or flash attention
(``torch.cuda.get_device_capability()[0] >= 8``). The backend has no CUDA compute
capability, so the redirect answers with one that makes those checks choose what the
backend supports: ``(8, 0)`` where it supports bfloat16, else ``(7, 0)``. The other fields
are the backend's own: its device name, its total memory (``mem_get_info``), and its
processor count (the backend's ``torch.<device>.get_device_properties`` where it has
one; the host's logical cores on the cpu backend; else 1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..interface import Backend

__all__ = ["DeviceProperties", "capability_of", "properties_of"]


@dataclass(frozen=True)
class DeviceProperties:
    """The fields of ``torch.cuda.get_device_properties(i)`` that scripts read, for a backend device."""

    name: str
    total_memory: int
    multi_processor_count: int
    major: int
    minor: int
    is_integrated: bool = False
    is_multi_gpu_board: bool = False

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name={self.name!r}, major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1 << 20)}MB, multi_processor_count={self.multi_processor_count})"
        )


def capability_of(backend: Backend) -> tuple[int, int]:
    """The CUDA compute capability CUDA-style feature checks should see for ``backend``."""
    return (8, 0) if backend.is_bf16_supported() else (7, 0)


def _native(backend: Backend, index: int | None) -> Any:
    """The backend's own ``torch.<device>.get_device_properties(i)``, or None."""
    props = getattr(backend.module, "get_device_properties", None)
    if props is None:
        return None
    try:
        return props(index or 0)
    except (RuntimeError, AttributeError, TypeError, ValueError):
        return None


def _processors(native: Any, backend: Backend) -> int:
    count = getattr(native, "multi_processor_count", None)
    if isinstance(count, int) and count > 0:
        return count
    if backend.device_type == "cpu":
        return os.cpu_count() or 1
    return 1


def properties_of(backend: Backend, index: int | None, total_memory: Any = None) -> DeviceProperties:
    """The properties of ``backend``'s device ``index``.

    ``total_memory``, unless given: the backend's own device properties' where it has them,
    else ``mem_get_info``'s total. Raises :class:`~accel_abstraction.errors.CapabilityError`
    when the backend can tell neither.
    """
    native = _native(backend, index)
    if total_memory is None:
        total_memory = getattr(native, "total_memory", None)
    total = backend.mem_get_info(index)[1] if total_memory is None else int(total_memory)
    major, minor = capability_of(backend)
    return DeviceProperties(backend.device_name(index), total, _processors(native, backend), major, minor)
