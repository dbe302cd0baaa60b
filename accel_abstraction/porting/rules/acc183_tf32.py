"""ACC183: TF32 flag."""

from __future__ import annotations

from ..apis import SAME, flag
from .base import Rule

RULE = Rule(
    "ACC183",
    "numerics",
    "TF32 flag",
    "accel.set_allow_tf32(b)",
    portable=True,
    apis=(
        flag("torch.backends.cuda.matmul.allow_tf32", "accel.set_allow_tf32", SAME),
        flag("torch.backends.cudnn.allow_tf32", "accel.set_allow_tf32", SAME),
    ),
    examples=(
        ("torch.backends.cuda.matmul.allow_tf32 = True", "accel.set_allow_tf32(True)"),
        (
            "torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True",
            "accel.set_allow_tf32(True)",
        ),
    ),
)
