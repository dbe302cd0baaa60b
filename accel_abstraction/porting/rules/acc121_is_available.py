"""ACC121: torch.cuda.is_available()."""

from __future__ import annotations

from ..apis import SAME, call
from .base import Rule

RULE = Rule(
    "ACC121",
    "cuda-api",
    "torch.cuda.is_available()",
    "accel.is_accelerator_available() (False on the cpu backend)",
    portable=True,
    apis=(call("torch.cuda.is_available", "accel.is_accelerator_available", SAME),),
    examples=(("ok = torch.cuda.is_available()", "ok = accel.is_accelerator_available()"),),
)
