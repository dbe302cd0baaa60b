"""ACC111: .cuda() moves to a CUDA device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fixes import Fix
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst


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


RULE = Rule(
    "ACC111",
    "tensor",
    ".cuda() moves to a CUDA device",
    ".to(accel.device())",
    portable=True,
    examples=(
        ("y = x.cuda(args.gpu, non_blocking=True)", "y = x.to(accel.device(args.gpu), non_blocking=True)"),
    ),
    counterexamples=("use_cuda = args.cuda",),
)
