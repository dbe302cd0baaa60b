"""ACC161: torch.cuda.synchronize()."""

from __future__ import annotations

from ..apis import RAISES, call
from .base import Rule

RULE = Rule(
    "ACC161",
    "sync-streams",
    "torch.cuda.synchronize()",
    "accel.synchronize()",
    portable=True,
    apis=(call("torch.cuda.synchronize", "accel.synchronize", RAISES),),
    examples=(("torch.cuda.synchronize()", "accel.synchronize()"),),
)
