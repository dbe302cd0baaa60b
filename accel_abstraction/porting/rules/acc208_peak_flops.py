"""ACC208: hard-coded GPU peak FLOPs (MFU)."""

from __future__ import annotations

from .base import Rule

RULE = Rule(
    "ACC208",
    "manual",
    "hard-coded GPU peak FLOPs (MFU)",
    "take peak FLOPs from the selected device",
    portable=False,
    examples=(("flops_promised = 312e12", None),),
    counterexamples=("flops_per_token = 6 * n_params",),
)
