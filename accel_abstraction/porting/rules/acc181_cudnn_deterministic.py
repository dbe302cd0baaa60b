"""ACC181: torch.backends.cudnn.deterministic."""

from __future__ import annotations

from ..apis import GUARDED, flag
from .base import Rule

RULE = Rule(
    "ACC181",
    "numerics",
    "torch.backends.cudnn.deterministic",
    "accel.set_deterministic(b)",
    portable=True,
    apis=(flag("torch.backends.cudnn.deterministic", "accel.set_deterministic", GUARDED, cpu_value="None"),),
    examples=(
        (
            "torch.backends.cudnn.deterministic = True",
            "if accel.is_accelerator_available():",
        ),
    ),
)
