"""ACC122: torch.cuda.device_count()."""

from __future__ import annotations

from ..apis import kept
from .base import Rule

RULE = Rule(
    "ACC122",
    "cuda-api",
    "torch.cuda.device_count()",
    "accel.device_count()",
    portable=True,
    apis=(kept("torch.cuda.device_count", "accel.device_count", "0"),),
    examples=(
        (
            "n = torch.cuda.device_count()",
            "n = accel.device_count() if accel.is_accelerator_available() else 0",
        ),
    ),
)
