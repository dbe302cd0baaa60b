"""ACC151: torch.cuda memory statistics."""

from __future__ import annotations

from ..apis import RAISES, SAME, call, kept, manual
from .base import Rule

RULE = Rule(
    "ACC151",
    "memory",
    "torch.cuda memory statistics",
    "accel.memory_allocated() and friends",
    portable=True,
    apis=(
        kept("torch.cuda.memory_allocated", "accel.memory_allocated", "0"),
        kept("torch.cuda.max_memory_allocated", "accel.max_memory_allocated", "0"),
        kept("torch.cuda.memory_reserved", "accel.memory_reserved", "0"),
        kept("torch.cuda.max_memory_reserved", "accel.max_memory_reserved", "0"),
        kept(
            "torch.cuda.memory_cached", "accel.memory_reserved", "0", "memory_cached is the deprecated name"
        ),
        kept(
            "torch.cuda.max_memory_cached",
            "accel.max_memory_reserved",
            "0",
            "max_memory_cached is the deprecated name",
        ),
        call("torch.cuda.reset_peak_memory_stats", "accel.reset_peak_memory_stats", RAISES),
        call(
            "torch.cuda.reset_max_memory_allocated",
            "accel.reset_peak_memory_stats",
            RAISES,
            hint="resets every peak, not only allocated",
        ),
        call("torch.cuda.empty_cache", "accel.empty_cache", SAME),
        kept("torch.cuda.memory_stats", "accel.memory_stats", "{}"),
        call("torch.cuda.mem_get_info", "accel.mem_get_info", RAISES),
        manual("torch.cuda.memory_summary", "no portable equivalent; print accel.memory_stats()"),
        manual("torch.cuda.set_per_process_memory_fraction", "no portable equivalent"),
        manual("torch.cuda.memory", "no public accel equivalent for this statistic"),
    ),
    examples=(
        (
            "m = torch.cuda.max_memory_allocated()",
            "m = accel.max_memory_allocated() if accel.is_accelerator_available() else 0",
        ),
    ),
)
