"""Memory statistics of the emulated devices, counted per neuron storage and per device.

Every neuron storage the emulator creates is counted here with its size and device
(:func:`allocate`); a weak-reference callback on the storage's Python object,
which lives exactly as long as the C++ storage, calls :func:`free` when the
storage goes (see ``storage.py``). Zero-byte storages are not allocations.
The emulator has no caching allocator, so "reserved" equals "allocated".

Each device has the memory of the device it emulates (:func:`configure`; by default a
Trainium2 logical NeuronCore's 24 GiB, ``emulate_memory`` / ``ACCEL_NEURON_EMULATE_MEMORY``
to change it). A neuron storage that would take a device past it is refused with
``torch.OutOfMemoryError`` in CUDA's words (:func:`out_of_memory`) before anything is
counted, and a host allocation that fails under a neuron op becomes one too
(:func:`host_failure`), so the statistics stay exact after either.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

import torch

#: The statistics kept per device. The C++ core keeps the same (``csrc/emulator.h``'s
#: ACCEL_NEURON_EMU_STATS, read through ``native.stat_names()``): :func:`use_native` refuses a core
#: that names others, and a test compares the two.
_KEYS = (
    "allocated",
    "peak",
    "alloc_count",
    "free_count",
    "allocated_total",
    "freed_total",
    "current_count",
    "peak_count",
    "num_ooms",
)

# one statistics dict per device index (see ensure())
_states: dict[int, dict[str, int]] = {}
# With the compiled per-op path the C++ core counts (its storages free themselves there): see use_native().
_native: Any = None


#: Bytes of one emulated device by default: a Trainium2 chip's 96 GiB of HBM shared by its 4 logical
#: NeuronCores at the default LNC=2 (AWS Neuron docs, Trn2 architecture; /work/shared/NEURON.md).
DEFAULT_CAPACITY = 24 * 2**30

_DEFAULT_SOURCE = "default: a Trainium2 logical NeuronCore's 24 GiB of HBM"
_capacity: dict[str, Any] = {"bytes": DEFAULT_CAPACITY, "source": _DEFAULT_SOURCE}

# The two out-of-memory messages, CUDA's wording; `{...}` fields are filled here and in csrc/allocator.cpp.
_DEVICE_OOM = (
    "neuron out of memory. Tried to allocate {size}. Device neuron:{index} has a total capacity of {total} "
    "of which {free} is free. Of the allocated memory {allocated} is allocated by PyTorch, and 0 bytes is "
    "reserved by PyTorch but unallocated (the emulated device has no caching allocator). The capacity is "
    "the emulated device's memory, emulate_memory = {capacity} bytes ({source}); set "
    "ACCEL_NEURON_EMULATE_MEMORY or [tool.accel.neuron] emulate_memory to emulate another device."
)
_HOST_OOM = (
    "neuron out of memory. Tried to allocate {size}. Device neuron:{index} has a total capacity of {total} "
    "of which {free} is free, but the host, whose memory backs the emulated device, could not allocate it "
    "({reason}). Free host memory, or allocate less."
)
_HOST_FAILURE = re.compile(r"DefaultCPUAllocator: .*?you tried to allocate (\d+) bytes")


def configure(nbytes: int, source: str) -> None:
    """Give every emulated device `nbytes` of memory (`source`: where the value came from, for messages)."""
    _capacity["bytes"], _capacity["source"] = (
        int(nbytes),
        source if source not in ("", "default") else _DEFAULT_SOURCE,
    )
    if _native is not None:
        _native.memory_capacity(int(nbytes), _template(_DEVICE_OOM), _template(_HOST_OOM))


def capacity(index: int = 0) -> int:
    """Bytes of memory emulated device `index` has (``get_device_properties().total_memory``)."""
    return int(_capacity["bytes"])


def _template(text: str) -> str:
    return text.replace("{capacity}", str(_capacity["bytes"])).replace("{source}", _capacity["source"])


def format_size(nbytes: int) -> str:
    """`nbytes` as CUDA's out-of-memory messages write sizes (``512 bytes``, ``3.00 KiB`` .. ``13.00 GiB``)."""
    if nbytes < 1024:
        return f"{nbytes} bytes"
    for unit, scale in (("KiB", 2**10), ("MiB", 2**20)):
        if nbytes < scale * 1024:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes / 2**30:.2f} GiB"


def out_of_memory(nbytes: int, index: int = 0, reason: str | None = None) -> torch.OutOfMemoryError:
    """The ``torch.OutOfMemoryError`` for `nbytes` more on device `index` (`reason`: the host's failure).

    Counted in ``memory_stats()["num_ooms"]`` here: every caller raises it.
    """
    s = _state(index)
    s["num_ooms"] += 1
    _store(index, s)
    held = allocated(index)
    total = capacity(index)
    fields = {
        "size": format_size(nbytes),
        "index": str(index),
        "total": format_size(total),
        "free": format_size(max(total - held, 0)),
        "allocated": format_size(held),
        "reason": reason or "",
    }
    text = _template(_DEVICE_OOM if reason is None else _HOST_OOM)
    for key, value in fields.items():
        text = text.replace("{" + key + "}", value)
    return torch.OutOfMemoryError(text)


def check(nbytes: int, index: int = 0) -> None:
    """Raise :func:`out_of_memory` if `nbytes` more would take device `index` past its capacity."""
    if nbytes and _states[index]["allocated"] + nbytes > _capacity["bytes"]:
        raise out_of_memory(nbytes, index)


def host_failure(exc: BaseException, index: int = 0) -> torch.OutOfMemoryError | None:
    """The ``torch.OutOfMemoryError`` for a host allocation failure `exc` under a neuron op, or None.

    A request past the device's capacity reads as the device's out-of-memory (the real device
    would have refused it); one within it names the host's failure.
    """
    if isinstance(exc, torch.OutOfMemoryError):
        return None
    found = _HOST_FAILURE.search(str(exc))
    if found is None:
        return None
    nbytes = int(found.group(1))
    over = allocated(index) + nbytes > capacity(index)
    reason = str(exc)[found.start() :].split(" Error code")[0].strip().rstrip(".")
    return out_of_memory(nbytes, index, None if over else reason)


def ensure(count: int) -> None:
    """Give devices ``0 .. count-1`` zeroed statistics (at install)."""
    for index in range(count):
        _states.setdefault(index, dict.fromkeys(_KEYS, 0))


def use_native(core: Any) -> None:
    """Read and reset the statistics in the C++ core (``native``), which counts every neuron storage.

    The core's c10 device allocator is registered too: ``torch.accelerator``'s memory functions read
    the same statistics through c10 (:func:`in_core`; ``limits.py`` routes them here otherwise).
    """
    global _native
    if tuple(core.stat_names()) != _KEYS:
        from .errors import EmulatorError

        raise EmulatorError(
            f"the neuron emulator's C++ core keeps the memory statistics {', '.join(core.stat_names())}, "
            f"memory.py {', '.join(_KEYS)}: csrc/emulator.h (its list of statistics) and memory._KEYS must "
            "name the same statistics in the same order; change both"
        )
    _native = core
    configure(_capacity["bytes"], _capacity["source"])
    core.register_device_allocator()


def in_core() -> bool:
    """Whether the C++ core keeps the statistics (the compiled per-op path), readable through c10's allocator API."""
    return _native is not None


def _state(index: int) -> dict[str, int]:
    if _native is not None:
        return dict(_native.memory_get(index))
    return _states[index]


def _store(index: int, s: dict[str, int]) -> None:
    if _native is not None:
        _native.memory_set(index, s)


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
    """Set the peak statistics of device `index` to the current values.

    With the C++ core, its reset_peak_stats (csrc/allocator.cpp, also torch.accelerator's through c10) does it.
    """
    if _native is not None:
        _native.reset_peak(index)
        return
    s = _states[index]
    s["peak"] = s["allocated"]
    s["peak_count"] = s["current_count"]


def reset_accumulated(index: int = 0) -> None:
    """Zero the accumulated (ever allocated / freed) counters of device `index`.

    With the C++ core, its reset_accumulated_stats (csrc/allocator.cpp, also torch.accelerator's through c10)
    does it.
    """
    if _native is not None:
        _native.reset_accumulated(index)
        return
    s = _states[index]
    for key in ("alloc_count", "free_count", "allocated_total", "freed_total", "num_ooms"):
        s[key] = 0


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
    out["num_ooms"] = s["num_ooms"]
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
