"""ACC124: torch.cuda.is_bf16_supported()."""

from __future__ import annotations

from ..apis import kept
from .base import Rule

RULE = Rule(
    "ACC124",
    "cuda-api",
    "torch.cuda.is_bf16_supported()",
    "accel.is_bf16_supported()",
    portable=True,
    apis=(kept("torch.cuda.is_bf16_supported", "accel.is_bf16_supported", "False"),),
    examples=(
        (
            "ok = torch.cuda.is_bf16_supported()",
            "ok = accel.is_bf16_supported() if accel.is_accelerator_available() else False",
        ),
    ),
)
