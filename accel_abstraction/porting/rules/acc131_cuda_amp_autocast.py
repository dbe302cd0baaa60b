"""ACC131: torch.cuda.amp.autocast."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..apis import ENABLED, call
from ..fixes import Fix
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst

    from ..context import ScanContext


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



def autocast_positional(scan: ScanContext, node: ast.Call, callee: str, guard: str) -> None:
    """``torch.cuda.amp.autocast(flag)``: its first parameter is ``enabled``; other positional arguments need a person."""
    if len(node.args) == 1 and not isinstance(node.args[0], ast.Starred) and not any(k.arg == "enabled" for k in node.keywords):
        scan.report(node.func, "ACC131", None, AutocastEnabled(callee=callee, guard=guard), fix_node=node,
                    suggestion="accel.autocast(enabled=...)")  # fmt: skip
    else:
        scan.report(node.func, "ACC131", "positional arguments differ from accel.autocast(dtype, enabled)")


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
