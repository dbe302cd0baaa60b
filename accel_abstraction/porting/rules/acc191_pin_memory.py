"""ACC191: pin_memory=True assumes CUDA."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..fixes import Replace
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext


def check_pin_memory_call(scan: ScanContext, node: ast.Call, qualname: str | None) -> bool:
    """``x.pin_memory()`` outside an accelerator guard."""
    if not node.args and not node.keywords and not scan._in_guard(node.lineno):
        scan.report(node, "ACC191", "Tensor.pin_memory() fails without CUDA", suggestion="guard with accel.capabilities().pinned_memory")
    return False


def check_pin_memory_argument(scan: ScanContext, call: ast.Call, keyword: ast.keyword, qualname: str | None) -> None:
    """``pin_memory=True`` outside an accelerator guard."""
    value = keyword.value
    if isinstance(value, ast.Constant) and value.value is True and not scan._in_guard(value.lineno):
        scan.report(value, "ACC191", None, Replace(text="accel.capabilities().pinned_memory"))

RULE = Rule(
    "ACC191",
    "data",
    "pin_memory=True assumes CUDA",
    "pin_memory=accel.capabilities().pinned_memory",
    portable=True,
    visits={"method:pin_memory": check_pin_memory_call, "keyword:pin_memory": check_pin_memory_argument},
    examples=(
        (
            "dl = DataLoader(ds, pin_memory=True)",
            "dl = DataLoader(ds, pin_memory=accel.capabilities().pinned_memory)",
        ),
        ("y = x.pin_memory()", None),
    ),
    counterexamples=(
        "if use_cuda:\n    y = x.pin_memory()",
        "dl = DataLoader(ds, pin_memory=args.pin_mem)",
    ),
)
