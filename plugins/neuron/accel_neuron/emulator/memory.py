"""Memory statistics of the emulated device, counted per neuron storage.

Every neuron storage the emulator creates is counted here with its size
(:func:`allocate`); a weak-reference callback on the storage's Python object,
which lives exactly as long as the C++ storage, calls :func:`free` when the
storage goes (see ``storage.py``). Zero-byte storages are not allocations.
The emulator has no caching allocator, so "reserved" equals "allocated".
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

_state = {
    "allocated": 0,
    "peak": 0,
    "alloc_count": 0,
    "free_count": 0,
    "allocated_total": 0,
    "freed_total": 0,
    "current_count": 0,
    "peak_count": 0,
}


def allocate(nbytes: int) -> None:
    """Count an allocation of `nbytes` bytes."""
    s = _state
    s["allocated"] += nbytes
    s["alloc_count"] += 1
    s["allocated_total"] += nbytes
    s["current_count"] += 1
    if s["allocated"] > s["peak"]:
        s["peak"] = s["allocated"]
    if s["current_count"] > s["peak_count"]:
        s["peak_count"] = s["current_count"]


def free(nbytes: int) -> None:
    """Count the release of an allocation of `nbytes` bytes."""
    s = _state
    s["allocated"] -= nbytes
    s["free_count"] += 1
    s["freed_total"] += nbytes
    s["current_count"] -= 1


def allocated() -> int:
    """Bytes currently held by live neuron storages."""
    return _state["allocated"]


def peak() -> int:
    """Highest value of :func:`allocated` since the last peak reset."""
    return _state["peak"]


def reset_peak() -> None:
    """Set the peak statistics to the current values."""
    _state["peak"] = _state["allocated"]
    _state["peak_count"] = _state["current_count"]


def reset_accumulated() -> None:
    """Zero the accumulated (ever allocated / freed) counters."""
    for key in ("alloc_count", "free_count", "allocated_total", "freed_total"):
        _state[key] = 0


def stats() -> dict[str, Any]:
    """A `memory_stats()`-style ordered dict; use the accessor functions, not raw keys."""
    s = _state
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


def summary() -> str:
    """A short human-readable table of the statistics."""
    s = _state
    lines = [
        "neuron emulator memory summary (device neuron:0, CPU-backed)",
        f"  allocated: {s['allocated']} B (peak {s['peak']} B)",
        f"  reserved:  {s['allocated']} B (no caching allocator: reserved == allocated)",
        f"  live storages: {s['current_count']} (peak {s['peak_count']})",
        f"  allocations: {s['alloc_count']}, frees: {s['free_count']}",
    ]
    return "\n".join(lines)
