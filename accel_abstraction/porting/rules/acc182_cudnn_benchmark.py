"""ACC182: torch.backends.cudnn.benchmark."""

from __future__ import annotations

from ..apis import SAME, flag
from .base import Rule

RULE = Rule(
    "ACC182",
    "numerics",
    "torch.backends.cudnn.benchmark",
    "accel.set_benchmark(b)",
    portable=True,
    apis=(flag("torch.backends.cudnn.benchmark", "accel.set_benchmark", SAME),),
    examples=(("torch.backends.cudnn.benchmark = True", "accel.set_benchmark(True)"),),
)
