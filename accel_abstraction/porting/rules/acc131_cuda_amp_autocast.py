"""ACC131: torch.cuda.amp.autocast."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..apis import ENABLED, call
from ..fixes import Fix
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True, kw_only=True)
class AutocastEnabled(Fix):
    """``torch.cuda.amp.autocast(flag, ...)`` becomes ``callee(enabled=flag, ...)``."""

    callee: str

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from ..cst_edit import Unapplied, cst, expr, keyword

        if (
            not isinstance(node, cst.Call)
            or not node.args
            or node.args[0].keyword is not None
            or node.args[0].star
        ):
            raise Unapplied
        return node.with_changes(
            func=expr(self.callee), args=[keyword(node.args[0], "enabled"), *node.args[1:]]
        )


RULE = Rule(
    "ACC131",
    "amp",
    "torch.cuda.amp.autocast",
    "accel.autocast(dtype=..., enabled=...)",
    portable=True,
    apis=(
        call(
            "torch.cuda.amp.autocast",
            "accel.autocast",
            ENABLED,
            hint="keyword arguments only; the dtype default follows the backend",
        ),
    ),
    examples=(
        (
            "with torch.cuda.amp.autocast(use_amp):\n    pass",
            "with accel.autocast(enabled=use_amp and accel.is_accelerator_available()):",
        ),
    ),
)
