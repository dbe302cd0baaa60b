"""ACC202: NVTX ranges or CUDA profiling."""

from __future__ import annotations

from ..apis import manual, package
from .base import Rule

RULE = Rule(
    "ACC202",
    "manual",
    "NVTX ranges or CUDA profiling",
    "torch.profiler.record_function",
    portable=False,
    apis=(
        manual("torch.cuda.nvtx", "use torch.profiler.record_function"),
        manual(
            "torch.profiler.ProfilerActivity.CUDA",
            "profile the selected device's activity; CUDA only on cuda",
        ),
        manual("torch.autograd.profiler.emit_nvtx", "use torch.profiler.record_function"),
        package("nvtx", "use torch.profiler.record_function"),
    ),
    examples=(
        ("torch.cuda.nvtx.range_push('step')", None),
        ("acts = [torch.profiler.ProfilerActivity.CUDA]", None),
    ),
)
