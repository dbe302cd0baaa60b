"""ACC113: device-type test: false on any other accelerator, so its branch is skipped.

``x.device.type == "cuda"``, ``name.startswith("cuda")``, ``"cuda" in str(device)`` and
``kind in ("cuda",)`` become ``accel.is_accelerator_device(...)`` (``not ...`` for ``!=`` /
``not in``): true exactly where the device is the selected accelerator, false for ``cpu``,
``meta``, ``mps``, ``xpu`` and any other type (:mod:`accel_abstraction.device_tests`).
``!= "cpu"`` would take ``meta`` and ``mps`` for the accelerator.

A test is a guard, and its rewrite looks at what it guards, as ACC121's does
(:mod:`..guarded`): where the CUDA side of ``if x.device.type == "cuda":`` (the body; for
``!= "cuda"`` the ``else`` branch and the rest of the block after an early
``return``/``raise``/``continue``/``break``; the rest of the block after an ``assert``; the
chosen value of ``a if x.device.type == "cuda" else b``) holds CUDA-only code (a site a rule reports as
needing a person: ``torch.cuda.get_device_capability()``, FP8 training), the test is left as
it is, a CUDA-only test true exactly where it was true before, and reported for a person with
that code: ``accel.is_accelerator_device`` would let the block run on any accelerator.
Elsewhere, guarded rewrites on the CUDA side of a test rewritten to
``accel.is_accelerator_device`` lose their repeated ``accel.is_accelerator_available()`` (the test
implies it; a list of device types, ``["cuda", "mps", *...]``, does not).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..findings import Finding
from ..fixes import Replace
from ..guarded import cuda_only_lines, cuda_sides, drop_repeated_guards
from ..guards import str_value
from .acc207_cuda_only_kernel import fused_device_test
from .base import Rule


class DeviceTest:
    """One device-type test found in an expression, and its portable form."""

    __slots__ = ("node", "text")

    def __init__(self, node: ast.AST, text: str | None) -> None:
        self.node = node  # the comparison (or startswith call) to rewrite
        self.text = text  # its portable replacement; None when it cannot be folded


#: The portable test: true exactly where the device is the selected accelerator (never for cpu, meta, mps, ...).
PREDICATE = "accel.is_accelerator_device"


def _predicate(subject: str | None, positive: bool) -> str | None:
    """``accel.is_accelerator_device(subject)``, negated for ``!=`` / ``not in``; ``None`` without a subject."""
    if subject is None:
        return None
    if "\n" in subject:
        subject = f"({subject})"
    text = f"{PREDICATE}({subject})"
    return text if positive else f"not {text}"


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
        subject = segment(node.func.value)
        return DeviceTest(node, _predicate(subject, True))
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
        # "cuda" in device  ->  accel.is_accelerator_device(device)
        if intentional(right):
            return None
        return DeviceTest(node, _predicate(segment(right), isinstance(op, ast.In)))
    for literal, other in ((right, left), (left, right)):
        value = str_value(literal)
        members: list[str] | None = None
        if value is None and isinstance(literal, (ast.Tuple, ast.List, ast.Set)) and isinstance(op, (ast.In, ast.NotIn)):
            members = [m or "" for m in map(str_value, literal.elts)]
            if "cuda" not in members or any(isinstance(e, ast.Starred) for e in literal.elts):
                # a starred member: computed (the port's own accelerator member among them)
                continue
        elif value is None or not value.startswith("cuda") or not isinstance(op, (ast.Eq, ast.NotEq)):
            continue
        if not is_device_ish(other) or intentional(other):
            return None
        positive = isinstance(op, (ast.Eq, ast.In))
        if value == "cuda" or members == ["cuda"]:
            return DeviceTest(node, _predicate(segment(other), positive))
        if members is not None:
            return DeviceTest(node, _with_accelerator(node, literal, other, members, segment))
        return DeviceTest(node, None)
    return None


#: What a list of device types gains: the selected accelerator's type, only where there is one.
ACCELERATOR_MEMBER = "*([accel.device_type()] if accel.is_accelerator_available() else [])"


def _with_accelerator(node: ast.Compare, literal: ast.AST, other: ast.AST, members: list[str], segment: Segment) -> str | None:
    """``device_type in ["cuda", "mps", "cpu"]`` with the selected accelerator's type added to the list.

    The test keeps its meaning where the program ran before: on the cpu backend nothing is added,
    on cuda ``"cuda"`` (already there); on another accelerator its type (``"neuron"``) is accepted
    as ``"cuda"`` was. ``None`` (a person decides) where the list names a CUDA device
    (``"cuda:0"``) besides ``"cuda"``, or its text holds a comment.
    """
    if any(m.startswith("cuda") and m != "cuda" for m in members) or literal is not node.comparators[0]:
        return None
    subject, listed = segment(other), segment(literal)
    if subject is None or listed is None or "#" in listed:
        return None
    body = listed[:-1].rstrip().rstrip(",")
    op = "in" if isinstance(node.ops[0], ast.In) else "not in"
    return f"{subject} {op} {body}, {ACCELERATOR_MEMBER}{listed[-1]}"


def _polarity(node: ast.AST) -> bool | None:
    """Whether a device-type test's true side is CUDA's (``==``, ``in``, ``startswith``); ``None``: not such a test."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = node.ops[0]
        if isinstance(op, (ast.Eq, ast.In)):
            return True
        if isinstance(op, (ast.NotEq, ast.NotIn)):
            return False
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith":
        return True
    return None


def _guard_test(test: ast.AST) -> tuple[ast.AST, ast.AST, bool] | None:
    """An ``if`` test that may be a device-type test: ``(the test, the test, whether the body is CUDA's)``."""
    positive = _polarity(test)
    if positive is not None:
        return test, test, positive
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            if _polarity(value):
                return value, value, True
    return None


Span = Callable[[ast.AST], "tuple[int, int, int, int]"]


def guard_what_it_guards(tree: ast.AST, span: Span, findings: list[Finding]) -> list[Finding]:
    """``findings`` with each device-type test of an ``if`` fitted to what it guards (module docstring)."""
    by_start = {(f.line, f.col): i for i, f in enumerate(findings) if f.code == "ACC113"}
    if not by_start:
        return findings
    out = list(findings)
    for test, _, _, side in cuda_sides(tree, _guard_test):
        line, col, _, _ = span(test)
        at = by_start.get((line, col + 1))
        if at is None or out[at].fix is None:
            continue
        cuda_only = cuda_only_lines(out, side)
        if not cuda_only:
            if PREDICATE in getattr(out[at].fix, "text", ""):
                # accel.is_accelerator_device(x) implies an accelerator; a list of device types
                # (["cuda", "mps", *...]) does not: "mps" passes it on the cpu backend
                drop_repeated_guards(out, side)
            continue
        out[at] = dataclasses.replace(
            out[at],
            fix=None,
            message=f"{RULE.message}: guards CUDA-only code (line {cuda_only[0]})",
            suggestion="manual: kept as a CUDA-only test, true exactly where it was; "
            "accel.is_accelerator_device would run that code on any accelerator",
        )
    return out


if TYPE_CHECKING:
    from ..context import ScanContext


def check_device_test(scan: ScanContext, node: ast.AST) -> bool:
    """Report ``node`` if it is a device-type test (ACC113; ACC207 where it chooses a fused kernel); return whether it was."""
    test = device_test(node, scan.segment, scan.device_ish, scan.intentional)
    if test is None:
        return False
    if id(node) in scan.fused:
        fused_device_test(scan, node)
    elif test.text is not None:
        scan.report(node, "ACC113", None, Replace(text=test.text), suggestion=test.text)
    else:
        scan.report(node, "ACC113", "cannot be folded to one test",
                    suggestion="it names a CUDA device (\"cuda:0\") besides other values; write the accelerator's test "
                    "by hand (accel.is_accelerator_device(x)) where that keeps its meaning on cpu and cuda")  # fmt: skip
    return True


def check_startswith(scan: ScanContext, node: ast.Call, qualname: str | None) -> bool:
    """``name.startswith("cuda")``: :func:`check_device_test`; the traversal goes on into the call."""
    check_device_test(scan, node)
    return False


RULE = Rule(
    "ACC113",
    "device-string",
    "device-type test: false on any other accelerator, so its branch is skipped",
    "accel.is_accelerator_device(x) (false for cpu, meta, mps and any other device)",
    portable=True,
    visits={"method:startswith": check_startswith},
    examples=(
        ('if x.device.type == "cuda":\n    pass', "if accel.is_accelerator_device(x.device.type):"),
        (
            "device_type = 'cuda' if 'cuda' in device else 'cpu'",
            "device_type = accel.device_type() if accel.is_accelerator_device(device) else 'cpu'",
        ),
        ('ok = device.startswith("cuda")', "ok = accel.is_accelerator_device(device)"),
        ('on_gpu = "cuda" in str(x.device)', "on_gpu = accel.is_accelerator_device(str(x.device))"),
        ('if device.type != "cuda":\n    pass', "if not accel.is_accelerator_device(device.type):"),
        # a guard around CUDA-only code stays a CUDA-only test, both polarities
        ('if x.device.type == "cuda":\n    print(torch.cuda.get_device_capability())', None),
        ('if device_type != "cuda":\n    print("no fp8")\nelse:\n    torch.cuda.ipc_collect()', None),
        ('def f(x):\n    if x.device.type != "cuda":\n        return\n    torch.cuda.ipc_collect()', None),
        ('for x in xs:\n    if is_ddp and x.device.type == "cuda":\n        torch.cuda.ipc_collect()', None),
        ('get_max_memory = torch.cuda.max_memory_allocated if device_type == "cuda" else lambda: 0', None),
        # a list of device types gains the selected accelerator's, only where there is one
        (
            'assert device_type in ["cuda", "mps", "cpu"], "bad"',
            'assert device_type in ["cuda", "mps", "cpu", *([accel.device_type()] if accel.is_accelerator_available() else [])], "bad"',
        ),
        (
            'if device not in ("cuda", "mps",):\n    pass',
            'if device not in ("cuda", "mps", *([accel.device_type()] if accel.is_accelerator_available() else [])):',
        ),
        # ... but not where that would open CUDA-only code, nor beside a CUDA device
        ('def f(device_type):\n    assert device_type in ["cuda", "cpu"]\n    print(torch.cuda.get_device_capability())', None),
        ('ok = device in ("cuda", "cuda:0", "cpu")', None),
        # a list of device types implies no accelerator ("mps" passes it): the guarded call still asks
        ('if device_type in ["cuda", "mps"]:\n    torch.cuda.manual_seed(0)', "    if accel.is_accelerator_available():"),
        # a rewritten test implies an accelerator: the guarded call does not ask again
        ('if device_type == "cuda":\n    torch.cuda.manual_seed(0)', "    accel.manual_seed(0)"),
    ),
    counterexamples=(
        'if accel.device_type() == "cuda":\n    pass',
        'if x.device.type == "cpu":\n    pass',
        "ok = accel.is_accelerator_device(device)",
        'ok = kind == "cuda"',
        'ok = device_type in ["cuda", "cpu", *([accel.device_type()] if accel.is_accelerator_available() else [])]',
    ),
)
