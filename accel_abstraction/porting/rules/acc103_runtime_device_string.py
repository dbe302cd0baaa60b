"""ACC103: CUDA device string built at run time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..fixes import Fix, expression
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True, kw_only=True)
class DeviceFrom(Fix):
    """``f"cuda:{i}"`` (``shape="fstring"``), ``"cuda:" + str(i)`` (``"concat"``) or ``"cuda:{}".format(i)``
    (``"format"``) becomes ``accel.device(i)``; so does ``torch.device(...)`` of one of them."""

    shape: Literal["fstring", "concat", "format"]

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from ..cst_edit import Unapplied, call, cst, keep_parens

        whole = node = expression(node)
        inner: cst.BaseExpression | None = None
        if isinstance(node, cst.Call) and len(node.args) == 1 and self.shape != "format":
            node = node.args[0].value  # torch.device(f"cuda:{i}") -> its argument
        elif (
            isinstance(node, cst.Call)
            and not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "format")
            and len(node.args) == 1
        ):
            node = node.args[0].value  # torch.device("cuda:{}".format(i)) -> its argument
        if self.shape == "fstring" and isinstance(node, cst.FormattedString):
            parts = node.parts
            if len(parts) == 2 and isinstance(parts[1], cst.FormattedStringExpression):
                inner = parts[1].expression
        elif self.shape == "concat" and isinstance(node, cst.BinaryOperation):
            right = node.right
            if isinstance(right, cst.Call) and len(right.args) == 1:
                inner = right.args[0].value
        elif self.shape == "format" and isinstance(node, cst.Call) and len(node.args) == 1:
            inner = node.args[0].value
        if inner is None:
            raise Unapplied
        return keep_parens(whole, call("accel.device", inner))


RULE = Rule(
    "ACC103",
    "device-string",
    "CUDA device string built at run time",
    'f"{accel.device_type()}:{i}"',
    portable=True,
    examples=(
        ("device = f'cuda:{rank}'", "device = f'{accel.device_type()}:{rank}'"),
        ('y = x.to("cuda:" + str(rank))', "y = x.to(accel.device(rank))"),
        ('name = "cuda:%d" % i', 'name = (accel.device_type() + ":%d") % i'),
    ),
    counterexamples=(
        'print(f"cuda:{rank} ready")',
        'log = f"using cuda {rank}"',
    ),
)
