"""ACC208: hard-coded GPU peak FLOPs (MFU)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext


def check_peak_flops(scan: ScanContext, target: ast.AST, name: str, value: ast.AST) -> None:
    """``peak_flops = 312e12``: an assignment to a name about FLOPs with a GPU-sized number, or named peak/promised."""
    lowered = name.lower()
    big = isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and value.value >= 1e11
    if big or "peak" in lowered or "promised" in lowered:
        scan.report(target, "ACC208", name, suggestion="peak FLOPs differ per device; take them from the selected device, not a GPU table")


RULE = Rule(
    "ACC208",
    "manual",
    "hard-coded GPU peak FLOPs (MFU)",
    "take peak FLOPs from the selected device",
    portable=False,
    examples=(("flops_promised = 312e12", None),),
    counterexamples=("flops_per_token = 6 * n_params",),
)
