"""Memory statistics of the CPU backend: the process's resident set size (RSS) and its peak.

The CPU allocator keeps no statistics that Python can read, so the cpu backend reports
what the operating system charges the process, as DeepSpeed's CPU accelerator does:

* *current* (``memory_allocated``, ``memory_reserved``): the RSS, from ``/proc/self/statm``;
* *peak* (``max_memory_*``): the kernel's high-water mark of the RSS (``VmHWM`` in
  ``/proc/self/status``), exact, not sampled;
* *reset* (``reset_peak_memory_stats``): writes ``5`` to ``/proc/self/clear_refs``, which makes
  the kernel restart the high-water mark at the current RSS. Where the kernel refuses (a
  read-only ``/proc``), the peak after a reset is the largest RSS seen by the statistics
  calls made since (sampled), and :func:`peak_is_sampled` says so.

The kernel keeps its RSS counters per CPU and folds them in batches, so its high-water
mark can trail an RSS read a moment earlier by a few hundred KiB; the peak reported is
never below an RSS this module has reported since the reset.

Where there is no ``/proc`` (macOS, Windows) the same figures come from psutil when it is
installed (it comes with the trainers' stack): the RSS from ``Process().memory_info().rss``,
the operating system's peak from ``peak_wset`` (Windows) or ``getrusage``'s ``ru_maxrss``
(macOS, the :mod:`resource` module); neither system lets a process restart its peak, so
after :func:`reset_peak` the peak is sampled, exactly as on a Linux whose ``/proc`` is
read-only. Host memory (:func:`mem_info`) is psutil's ``virtual_memory()``.

These figures count everything the process holds (the interpreter, libraries, every
tensor whose pages were touched), not only tensors: ``torch.empty(n)`` adds to the RSS
only once written. Available where ``/proc/self/statm`` is readable (Linux) or psutil is
installed; :func:`supported` says whether it is.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

__all__ = ["mem_info", "peak", "peak_is_sampled", "reset_peak", "rss", "stats", "supported"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_lock = threading.Lock()
#: The largest RSS this module reported since start or the last reset (the kernel's own
#: counters are batched per CPU, so its high-water mark can trail a value read a moment ago).
_seen = 0
#: False once the kernel refused to reset its high-water mark: the peak is then only sampled.
_kernel_peak = True


def supported() -> bool:
    """True if the process's RSS can be read here (``/proc/self/statm``, else psutil)."""
    try:
        rss()
    except (OSError, ValueError, IndexError):
        return False
    return True


def _psutil() -> Any:
    """The psutil module, or ``None`` where it is not installed."""
    try:
        import psutil
    except ImportError:
        return None
    return psutil


def _without_proc(what: str) -> OSError:
    return OSError(f"no /proc/self/{what} and psutil is not installed: pip install psutil for CPU memory statistics")


def _current() -> int:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except OSError:
        psutil = _psutil()
        if psutil is None:
            raise _without_proc("statm") from None
        return int(psutil.Process().memory_info().rss)


def rss() -> int:
    """The process's resident set size in bytes."""
    global _seen
    value = _current()
    if value > _seen:
        _seen = value
    return value


def _os_peak() -> int:
    """The operating system's high-water mark of the RSS, in bytes."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
        raise ValueError("/proc/self/status has no VmHWM: line")
    except OSError:
        pass
    psutil = _psutil()
    info = psutil.Process().memory_info() if psutil is not None else None
    if info is not None and hasattr(info, "peak_wset"):  # Windows
        return int(info.peak_wset)
    try:
        import resource
    except ImportError:
        raise _without_proc("status") from None
    maxrss = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return maxrss if sys.platform == "darwin" else maxrss * 1024  # bytes on macOS, KiB elsewhere


def peak() -> int:
    """The highest RSS in bytes since the process started or the last :func:`reset_peak`."""
    global _kernel_peak
    current = rss()
    with _lock:
        if _kernel_peak:
            try:
                return max(_os_peak(), _seen, current)
            except (OSError, ValueError):
                _kernel_peak = False
        return max(_seen, current)


def reset_peak() -> None:
    """Restart the peak at the current RSS."""
    global _seen, _kernel_peak
    with _lock:
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
                fh.write("5")
        except OSError:
            _kernel_peak = False
        _seen = 0
        rss()


def peak_is_sampled() -> bool:
    """True when the kernel could not reset its high-water mark and the peak is sampled at each call."""
    return not _kernel_peak


def stats() -> dict[str, int]:
    """The figures under the keys ``torch.cuda.memory_stats()`` uses for them."""
    current, top = rss(), peak()
    return {
        "allocated_bytes.all.current": current,
        "allocated_bytes.all.peak": top,
        "reserved_bytes.all.current": current,
        "reserved_bytes.all.peak": top,
    }


def mem_info() -> tuple[int, int]:
    """``(available, total)`` host memory in bytes, from ``/proc/meminfo`` (``MemAvailable``, ``MemTotal``),
    else psutil's ``virtual_memory()``."""
    values: dict[bytes, int] = {}
    try:
        fh = open("/proc/meminfo", "rb")  # noqa: SIM115 - closed below
    except OSError:
        psutil = _psutil()
        if psutil is None:
            raise _without_proc("meminfo") from None
        vm = psutil.virtual_memory()
        return int(vm.available), int(vm.total)
    with fh:
        for line in fh:
            key, _, rest = line.partition(b":")
            if key in (b"MemAvailable", b"MemTotal"):
                values[key] = int(rest.split()[0]) * 1024
    return values[b"MemAvailable"], values[b"MemTotal"]
