"""ACC204: NVIDIA apex."""

from __future__ import annotations

from ..apis import package
from .base import Rule

RULE = Rule(
    "ACC204",
    "manual",
    "NVIDIA apex",
    "torch.amp / torch.optim equivalents",
    portable=False,
    apis=(
        package(
            "apex", "apex is NVIDIA-only; use torch.amp (accel.autocast, accel.GradScaler) and torch.optim"
        ),
    ),
    examples=(("from apex import amp\nmodel, opt = amp.initialize(model, opt)", None),),
)
