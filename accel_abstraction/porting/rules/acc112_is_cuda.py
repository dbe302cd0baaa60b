"""ACC112: .is_cuda tests for a CUDA device."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fixes import Fix
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst

    from ..context import ScanContext


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



def check_is_cuda(scan: ScanContext, node: ast.Attribute) -> None:
    """``x.is_cuda`` (read): report it, rewritten to ``x.device.type != "cpu"``."""
    if node.attr == "is_cuda" and isinstance(node.ctx, ast.Load):
        scan.report(node, "ACC112", None, IsCuda(paren=_needs_paren(scan, node)))


def _parent(scan: ScanContext, node: ast.AST) -> ast.AST | None:
    """The parent of ``node``, found by walking only the top-level statement holding it."""
    if id(node) not in scan.is_cuda_parents:
        line = node.lineno  # type: ignore[attr-defined]
        for stmt in scan.tree.body:
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                for parent in ast.walk(stmt):
                    for child in ast.iter_child_nodes(parent):
                        if isinstance(child, ast.Attribute) and child.attr == "is_cuda":
                            scan.is_cuda_parents[id(child)] = parent
                break
    return scan.is_cuda_parents.get(id(node))

def _needs_paren(scan, node: ast.AST) -> bool:
    parent = _parent(scan, node)
    if parent is None:
        return True
    return not isinstance(parent, (ast.BoolOp, ast.If, ast.While, ast.Assign, ast.Return, ast.IfExp, ast.keyword, ast.Call, ast.Assert))


RULE = Rule(
    "ACC112",
    "tensor",
    ".is_cuda tests for a CUDA device",
    '.device.type != "cpu" (on an accelerator)',
    portable=True,
    examples=(("ok = x.is_cuda and y", 'ok = x.device.type != "cpu" and y'),),
)
