"""Device-type tests and the names that hold device strings (the scanner's data-flow step).

A *device-type test* asks whether something is CUDA: ``device.type == "cuda"``,
``device_type != "cuda"``, ``"cuda" in device``, ``device.startswith("cuda")``,
``x.device.type in ("cuda",)``.  On another accelerator such a test is false, so the
branch it guards (``model.cuda()``, ``torch.cuda.synchronize()``) is silently skipped.
The portable form asks "is this an accelerator" instead: ``!= "cpu"``, which keeps the
meaning on cpu and cuda and takes the accelerator branch on any other device.

Which expressions are *device-ish* (the other side of such a test):
- attributes ``.type`` / ``.device_type`` (``x.device.type``, ``self.device_type``);
- names and attributes named like a device (``device``, ``dev``, ``device_type``,
  ``args.device``, ``train_device``);
- names assigned a device string anywhere in the module (``arg = "cuda:0"``), found by
  :func:`device_string_names`;
- ``str(e)`` of any of these.
Calls into ``accel`` or ``torch.accelerator`` are intentional and never reported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

#: Names that hold a device or a device type by their name alone.
DEVICE_NAME = re.compile(r"(^|_)(device|dev)(_name|_str|_type)?$", re.IGNORECASE)
_CUDA_LITERAL = re.compile(r"^cuda(:\d+)?$")


def str_value(node: ast.AST | None) -> str | None:
    """The value of a string constant (an f-string without placeholders too: ``f"cuda"``), else ``None``."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
    return None


def last_name(node: ast.AST) -> str | None:
    """``x`` for ``x`` or ``a.b.x``; ``None`` for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def is_cuda_string(node: ast.AST | None) -> bool:
    """A literal ``"cuda"`` / ``"cuda:N"``, an f-string starting ``cuda:``, or an if-expression of one."""
    if isinstance(node, ast.IfExp):
        return is_cuda_string(node.body) or is_cuda_string(node.orelse)
    value = str_value(node)
    if value is not None:
        return _CUDA_LITERAL.match(value) is not None
    if isinstance(node, ast.JoinedStr) and node.values:
        head = str_value(node.values[0])
        return head is not None and head.startswith("cuda:")
    return False


def device_string_names(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """Names (and attribute names) assigned a CUDA device string in ``nodes`` (a module's walk)."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and is_cuda_string(node.value):
            for target in node.targets:
                name = last_name(target)
                if name:
                    names.add(name)
        elif isinstance(node, ast.AnnAssign) and is_cuda_string(node.value):
            name = last_name(node.target)
            if name:
                names.add(name)
    return frozenset(names)


def device_positions(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """Names passed where a device is expected (``torch.device(n)``, ``.to(n)``, ``device=n``) in ``nodes``."""
    names: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        candidates: list[ast.AST] = []
        if isinstance(func, ast.Attribute) and func.attr in ("to", "device") and node.args:
            candidates.append(node.args[0])
        candidates += [kw.value for kw in node.keywords if kw.arg in ("device", "map_location")]
        for arg in candidates:
            name = last_name(arg)
            if name:
                names.add(name)
    return frozenset(names)


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
