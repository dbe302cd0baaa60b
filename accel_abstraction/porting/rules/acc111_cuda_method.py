"""ACC111: .cuda() moves to a CUDA device."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fixes import Fix
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst

    from ..scanner import Scan


@dataclass(frozen=True, kw_only=True)
class ToDevice(Fix):
    """``x.cuda(i, **kw)`` becomes ``x.to(accel.device(i), **kw)`` (``x.cuda()``: ``x.to(accel.device())``)."""

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from ..cst_edit import Unapplied, call, cst, expr

        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            raise Unapplied
        args = list(node.args)
        index_arg = None
        for i, arg in enumerate(args):
            if (arg.keyword is None and not arg.star and i == 0) or (
                arg.keyword is not None and arg.keyword.value == "device"
            ):
                index_arg = args.pop(i)
                break
        device = call("accel.device", index_arg.value) if index_arg is not None else expr("accel.device()")
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if args else cst.MaybeSentinel.DEFAULT
        return node.with_changes(
            func=node.func.with_changes(attr=cst.Name("to")), args=[cst.Arg(device, comma=comma), *args]
        )


def check_cuda_call(scan: Scan, node: ast.Call, qualname: str | None) -> bool:
    """``x.cuda(...)`` of anything not resolved to an import (``torch.cuda(...)`` is no method call):
    reported and rewritten; the receiver and the arguments are walked here."""
    if qualname is not None:
        return False
    assert isinstance(node.func, ast.Attribute)
    scan.report(node, "ACC111", None, ToDevice())
    scan.push(node.func.value)
    scan.push_call_args(node)
    return True


RULE = Rule(
    "ACC111",
    "tensor",
    ".cuda() moves to a CUDA device",
    ".to(accel.device())",
    portable=True,
    visits={"method:cuda": check_cuda_call},
    examples=(
        ("y = x.cuda(args.gpu, non_blocking=True)", "y = x.to(accel.device(args.gpu), non_blocking=True)"),
    ),
    counterexamples=("use_cuda = args.cuda",),
)
