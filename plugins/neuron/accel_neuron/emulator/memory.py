"""Memory statistics of the emulated devices, counted per neuron storage and per device.

Every neuron storage the emulator creates is counted here with its size and device
(:func:`allocate`); a weak-reference callback on the storage's Python object,
which lives exactly as long as the C++ storage, calls :func:`free` when the
storage goes (see ``storage.py``). Zero-byte storages are not allocations.
The emulator has no caching allocator, so "reserved" equals "allocated".
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

_KEYS = (
    "allocated",
    "peak",
    "alloc_count",
    "free_count",
    "allocated_total",
    "freed_total",
    "current_count",
    "peak_count",
)

# one statistics dict per device index (see ensure())
_states: dict[int, dict[str, int]] = {}
# With the compiled per-op path the C++ core counts (its storages free themselves there): see use_native().
_native: Any = None


def ensure(count: int) -> None:
    """Give devices ``0 .. count-1`` zeroed statistics (at install)."""
    for index in range(count):
        _states.setdefault(index, dict.fromkeys(_KEYS, 0))


def use_native(core: Any) -> None:
    """Read and reset the statistics in the C++ core (``native``), which counts every neuron storage."""
    global _native
    _native = core


def _state(index: int) -> dict[str, int]:
    if _native is not None:
        return dict(zip(_KEYS, _native.memory_get(index), strict=True))
    return _states[index]


def _store(index: int, s: dict[str, int]) -> None:
    if _native is not None:
        _native.memory_set(index, [s[k] for k in _KEYS])


def allocate(nbytes: int, index: int = 0) -> None:
    """Count an allocation of `nbytes` bytes on device `index`."""
    s = _states[index]
    s["allocated"] += nbytes
    s["alloc_count"] += 1
    s["allocated_total"] += nbytes
    s["current_count"] += 1
    if s["allocated"] > s["peak"]:
        s["peak"] = s["allocated"]
    if s["current_count"] > s["peak_count"]:
        s["peak_count"] = s["current_count"]


def free(nbytes: int, index: int = 0) -> None:
    """Count the release of an allocation of `nbytes` bytes on device `index`."""
    s = _states[index]
    s["allocated"] -= nbytes
    s["free_count"] += 1
    s["freed_total"] += nbytes
    s["current_count"] -= 1


def allocated(index: int = 0) -> int:
    """Bytes currently held by live neuron storages on device `index`."""
    return _state(index)["allocated"]


def peak(index: int = 0) -> int:
    """Highest value of :func:`allocated` since the last peak reset."""
    return _state(index)["peak"]


def reset_peak(index: int = 0) -> None:
    """Set the peak statistics of device `index` to the current values."""
    s = _state(index)
    s["peak"] = s["allocated"]
    s["peak_count"] = s["current_count"]
    _store(index, s)


def reset_accumulated(index: int = 0) -> None:
    """Zero the accumulated (ever allocated / freed) counters of device `index`."""
    s = _state(index)
    for key in ("alloc_count", "free_count", "allocated_total", "freed_total"):
        s[key] = 0
    _store(index, s)


def stats(index: int = 0) -> dict[str, Any]:
    """A `memory_stats()`-style ordered dict; use the accessor functions, not raw keys."""
    s = _state(index)
    out: OrderedDict[str, Any] = OrderedDict()
    for name, cur, peak_, alloc, freed in (
        ("allocated_bytes", s["allocated"], s["peak"], s["allocated_total"], s["freed_total"]),
        ("reserved_bytes", s["allocated"], s["peak"], s["allocated_total"], s["freed_total"]),
        ("allocation", s["current_count"], s["peak_count"], s["alloc_count"], s["free_count"]),
    ):
        out[f"{name}.all.current"] = cur
        out[f"{name}.all.peak"] = peak_
        out[f"{name}.all.allocated"] = alloc
        out[f"{name}.all.freed"] = freed
    out["num_alloc_retries"] = 0
    out["num_ooms"] = 0
    return out


def summary(index: int = 0) -> str:
    """A short human-readable table of the statistics of device `index`."""
    s = _state(index)
    lines = [
        f"neuron emulator memory summary (device neuron:{index}, CPU-backed)",
        f"  allocated: {s['allocated']} B (peak {s['peak']} B)",
        f"  reserved:  {s['allocated']} B (no caching allocator: reserved == allocated)",
        f"  live storages: {s['current_count']} (peak {s['peak_count']})",
        f"  allocations: {s['alloc_count']}, frees: {s['free_count']}",
    ]
    return "\n".join(lines)


ensure(1)
