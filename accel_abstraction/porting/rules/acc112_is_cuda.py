"""ACC112: .is_cuda tests for a CUDA device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fixes import Fix
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True, kw_only=True)
class IsCuda(Fix):
    """``x.is_cuda`` becomes ``x.device.type != "cpu"``: false for a CPU tensor, as ``.is_cuda`` was
    on a machine without CUDA (parenthesised when ``paren``)."""

    paren: bool = False

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from ..cst_edit import Unapplied, cst, expr, keep_parens

        if not isinstance(node, cst.Attribute):
            raise Unapplied
        left = cst.Attribute(
            value=cst.Attribute(value=node.value, attr=cst.Name("device")), attr=cst.Name("type")
        )
        comparison = cst.Comparison(
            left=left, comparisons=[cst.ComparisonTarget(cst.NotEqual(), expr('"cpu"'))]
        )
        if self.paren:
            comparison = comparison.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return keep_parens(node, comparison)


RULE = Rule(
    "ACC112",
    "tensor",
    ".is_cuda tests for a CUDA device",
    '.device.type != "cpu" (on an accelerator)',
    portable=True,
    examples=(("ok = x.is_cuda and y", 'ok = x.device.type != "cpu" and y'),),
)
