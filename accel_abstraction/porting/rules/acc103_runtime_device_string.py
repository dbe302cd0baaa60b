"""ACC103: CUDA device string built at run time."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..fixes import Fix, Replace, expression
from ..guards import last_name, str_value
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst

    from ..context import ScanContext

_STRING_PREFIX = re.compile(r"^([rRuU]?)(['\"])cuda")


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


def runtime_string(scan: ScanContext, node: ast.AST, string_typed: bool = True) -> bool:
    """``f"cuda:{i}"``, ``"cuda:{}".format(i)``, ``"cuda:%d" % i``, ``"cuda:" + str(i)``.

    Returns whether ``node`` was one.  In a device position (``string_typed`` false) the
    simple shapes become ``accel.device(i)``; elsewhere the leading ``cuda`` becomes
    ``accel.device_type()`` and the value stays a string.
    """
    if id(node) in scan.done:
        return True
    literal: ast.AST | None = None
    simple_kind: Literal["fstring", "concat", "format"] | None = None
    if isinstance(node, ast.JoinedStr):
        head = str_value(node.values[0]) if node.values else None
        if head is None or not head.startswith("cuda:"):
            return False
        values = node.values
        if (
            head == "cuda:"
            and len(values) == 2
            and isinstance(values[1], ast.FormattedValue)
            and values[1].conversion == -1
            and values[1].format_spec is None
        ):
            simple_kind = "fstring"
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left = str_value(node.left)
        if left is None or not (left == "cuda" or left.startswith("cuda:")):
            return False
        literal = node.left
        right = node.right
        if (
            isinstance(node.op, ast.Add)
            and left == "cuda:"
            and isinstance(right, ast.Call)
            and last_name(right.func) == "str"
            and len(right.args) == 1
        ):
            simple_kind = "concat"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        fmt = str_value(node.func.value)
        if fmt is None or not fmt.startswith("cuda:"):
            return False
        literal = node.func.value
        if fmt == "cuda:{}" and len(node.args) == 1 and not node.keywords:
            simple_kind = "format"
    else:
        return False
    scan.done.add(id(node))
    if not string_typed and simple_kind is not None:
        scan.report(node, "ACC103", None, DeviceFrom(shape=simple_kind))
        return True
    # Keep a string: rewrite only the leading "cuda" of the literal.
    if isinstance(node, ast.JoinedStr):
        segment = scan.segment(node) or ""
        match = re.match(r"^([fFrR]{1,2})(['\"]{1,3})cuda", segment)
        if match is None:
            scan.report(node, "ACC103", "f-string")
            return True
        text = match.group(0)[:-4] + "{accel.device_type()}" + segment[match.end() :]
        scan.report(node, "ACC103", None, Replace(text=text), suggestion="f\"{accel.device_type()}:...\"")
        return True
    assert literal is not None
    segment = scan.segment(literal) or ""
    match = _STRING_PREFIX.match(segment)
    if match is None or "\n" in segment:
        scan.report(node, "ACC103", "string built at run time")
        return True
    rest = match.group(1) + match.group(2) + segment[match.end() :]
    empty = rest[len(match.group(1)) :] in ('""', "''")
    text = "accel.device_type()" if empty else f"(accel.device_type() + {rest})"
    scan.report(node, "ACC103", None, Replace(text=text), fix_node=literal, suggestion="accel.device_type() + ...")
    return True


def check_format_call(scan: ScanContext, node: ast.Call, qualname: str | None) -> bool:
    """``"cuda:{}".format(i)`` outside a device position: the string stays a string."""
    runtime_string(scan, node)
    return False


RULE = Rule(
    "ACC103",
    "device-string",
    "CUDA device string built at run time",
    'f"{accel.device_type()}:{i}"',
    portable=True,
    visits={"method:format": check_format_call},
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
