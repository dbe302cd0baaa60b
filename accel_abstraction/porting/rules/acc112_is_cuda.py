"""ACC112: .is_cuda tests for a CUDA device."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fixes import Fix
from .acc113_device_type_test import PREDICATE
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst

    from ..context import ScanContext


@dataclass(frozen=True, kw_only=True)
class IsCuda(Fix):
    """``x.is_cuda`` becomes ``accel.is_accelerator_device(x.device)``: false for a CPU or meta
    tensor and everywhere on the cpu backend, as ``.is_cuda`` was on a machine without CUDA."""

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from ..cst_edit import Unapplied, call, cst, keep_parens

        if not isinstance(node, cst.Attribute):
            raise Unapplied
        return keep_parens(node, call(PREDICATE, cst.Attribute(value=node.value, attr=cst.Name("device"))))


def check_is_cuda(scan: ScanContext, node: ast.Attribute) -> None:
    """``x.is_cuda`` (read): report it, rewritten to ``accel.is_accelerator_device(x.device)``."""
    if node.attr == "is_cuda" and isinstance(node.ctx, ast.Load):
        scan.report(node, "ACC112", None, IsCuda())


RULE = Rule(
    "ACC112",
    "tensor",
    ".is_cuda tests for a CUDA device",
    "accel.is_accelerator_device(x.device) (false for cpu and meta tensors)",
    portable=True,
    visits={"attribute:is_cuda": check_is_cuda},
    examples=(("ok = x.is_cuda and y", "ok = accel.is_accelerator_device(x.device) and y"),),
)
