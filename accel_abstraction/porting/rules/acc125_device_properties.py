"""ACC125: CUDA device properties or compute capability."""

from __future__ import annotations

from ..apis import manual
from .base import Rule

RULE = Rule(
    "ACC125",
    "cuda-api",
    "CUDA device properties or compute capability",
    "accel.capabilities() says what the device supports",
    portable=False,
    apis=(
        manual("torch.cuda.get_device_properties", "no portable equivalent; ask accel.capabilities()"),
        manual(
            "torch.cuda.get_device_capability", "compute capability is CUDA-only; ask accel.capabilities()"
        ),
        manual("torch.cuda.get_arch_list", "CUDA architectures have no portable equivalent"),
    ),
    examples=(("p = torch.cuda.get_device_properties(0)", None),),
)
