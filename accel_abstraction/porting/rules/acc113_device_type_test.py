"""ACC113: device-type test: false on any other accelerator, so its branch is skipped."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..fixes import Replace
from ..guards import str_value
from .base import Rule


class DeviceTest:
    """One device-type test found in an expression, and its portable form."""

    __slots__ = ("node", "text")

    def __init__(self, node: ast.AST, text: str | None) -> None:
        self.node = node  # the comparison (or startswith call) to rewrite
        self.text = text  # its portable replacement; None when it cannot be folded


def _quote(segment: Segment, literal: ast.AST) -> str:
    text = segment(literal) or '"'
    return "'" if text[:1] == "'" else '"'


Predicate = Callable[[ast.AST], bool]
#: ``segment(node)``: the source text of a node, or ``None``.
Segment = Callable[[ast.AST], "str | None"]


def device_test(node: ast.AST, segment: Segment, is_device_ish: Predicate, intentional: Predicate) -> DeviceTest | None:
    """``node`` as a device-type test (a comparison or a ``startswith`` call), or ``None``."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare(node, segment, is_device_ish, intentional)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "startswith"
        and len(node.args) == 1
        and not node.keywords
        and str_value(node.args[0]) in ("cuda", "cuda:")
        and is_device_ish(node.func.value)
        and not intentional(node.func.value)
    ):
        q = _quote(segment, node.args[0])
        subject = segment(node.func.value)
        text = f"not {subject}.startswith({q}cpu{q})" if subject else None
        return DeviceTest(node, text)
    return None


def find_device_tests(test: ast.AST, segment: Segment, is_device_ish: Predicate, intentional: Predicate) -> Iterable[DeviceTest]:
    """Every device-type test inside the expression ``test``."""
    for sub in ast.walk(test):
        found = device_test(sub, segment, is_device_ish, intentional)
        if found is not None:
            yield found


def _compare(node: ast.Compare, segment: Segment, is_device_ish: Predicate, intentional: Predicate) -> DeviceTest | None:
    op = node.ops[0]
    left, right = node.left, node.comparators[0]
    if isinstance(op, (ast.In, ast.NotIn)) and str_value(left) == "cuda" and is_device_ish(right):
        # "cuda" in device  ->  "cpu" not in device
        if intentional(right):
            return None
        q = _quote(segment, left)
        subject = segment(right)
        neg = "not in" if isinstance(op, ast.In) else "in"
        text = f"{q}cpu{q} {neg} {subject}" if subject else None
        return DeviceTest(node, text)
    for literal, other in ((right, left), (left, right)):
        value = str_value(literal)
        members: list[str] | None = None
        if value is None and isinstance(literal, (ast.Tuple, ast.List, ast.Set)) and isinstance(op, (ast.In, ast.NotIn)):
            members = [m or "" for m in map(str_value, literal.elts)]
            if "cuda" not in members:
                continue
        elif value is None or not value.startswith("cuda") or not isinstance(op, (ast.Eq, ast.NotEq)):
            continue
        if not is_device_ish(other) or intentional(other):
            return None
        positive = isinstance(op, (ast.Eq, ast.In))
        subject = segment(other)
        foldable = subject is not None and (value == "cuda" or members == ["cuda"])
        q = _quote(segment, literal if members is None else literal.elts[0])  # type: ignore[attr-defined]
        text = f"{subject} {'!=' if positive else '=='} {q}cpu{q}" if foldable else None
        return DeviceTest(node, text)
    return None



if TYPE_CHECKING:
    from ..context import ScanContext


def check_device_test(scan: ScanContext, node: ast.AST) -> bool:
    """Report ``node`` if it is a device-type test (ACC113; ACC207 where it chooses a fused kernel); return whether it was."""
    test = device_test(node, scan.segment, scan.device_ish, scan.intentional)
    if test is None:
        return False
    if id(node) in scan.fused:
        scan.report(node, "ACC207", "fused kernel chosen because the device is CUDA",
                    suggestion="fused kernels exist per device; ask a person which one the backend has")  # fmt: skip
    elif test.text is not None:
        scan.report(node, "ACC113", None, Replace(text=test.text), suggestion=test.text)
    else:
        scan.report(node, "ACC113", "cannot be folded to one test")
    return True


RULE = Rule(
    "ACC113",
    "device-string",
    "device-type test: false on any other accelerator, so its branch is skipped",
    '!= "cpu" (an accelerator)',
    portable=True,
    examples=(
        ('if x.device.type == "cuda":\n    pass', 'if x.device.type != "cpu":'),
        (
            "device_type = 'cuda' if 'cuda' in device else 'cpu'",
            "device_type = accel.device_type() if 'cpu' not in device else 'cpu'",
        ),
        ('ok = device.startswith("cuda")', 'ok = not device.startswith("cpu")'),
    ),
    counterexamples=(
        'if accel.device_type() == "cuda":\n    pass',
        'if x.device.type == "cpu":\n    pass',
        'ok = kind == "cuda"',
    ),
)
