"""ACC133: CUDA GradScaler."""

from __future__ import annotations

from ..apis import ENABLED, call
from .base import Rule

RULE = Rule(
    "ACC133",
    "amp",
    "CUDA GradScaler",
    "accel.GradScaler(...)",
    portable=True,
    apis=(
        call("torch.cuda.amp.GradScaler", "accel.GradScaler", ENABLED),
        call("torch.cuda.amp.grad_scaler.GradScaler", "accel.GradScaler", ENABLED),
    ),
    examples=(
        (
            "s = torch.cuda.amp.GradScaler(enabled=fp16)",
            "s = accel.GradScaler(enabled=fp16 and accel.is_accelerator_available())",
        ),
    ),
    counterexamples=('s = torch.amp.GradScaler("cpu")',),
)
