"""ACC207: CUDA-only kernel or capability."""

from __future__ import annotations

from ..apis import manual
from .base import Rule

RULE = Rule(
    "ACC207",
    "manual",
    "CUDA-only kernel or capability",
    "guard with accel.capabilities()",
    portable=False,
    apis=(
        manual("torch._scaled_mm", "FP8 matmul is a capability question; guard with accel.capabilities()"),
        manual(
            "torch.nn.DataParallel",
            "its scatter/gather are CUDA-only; use DistributedDataParallel under torchrun",
        ),
        manual(
            "torch.nn.parallel.DataParallel",
            "its scatter/gather are CUDA-only; use DistributedDataParallel under torchrun",
        ),
    ),
    examples=(
        ("opt = torch.optim.AdamW(params, fused=True)", None),
        ("use_fused = device_type == 'cuda'", None),
        ("y = torch._scaled_mm(a, b, scale_a=s, scale_b=s)", None),
    ),
    counterexamples=("opt = torch.optim.AdamW(params, fused=False)",),
)
