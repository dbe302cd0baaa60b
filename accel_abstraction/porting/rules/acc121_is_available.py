"""ACC121: torch.cuda.is_available(), and what a guard made of it guards.

``torch.cuda.is_available()`` ports to ``accel.is_accelerator_available()`` (False on the cpu
backend, True on any accelerator). As the test of an ``if``, that opens the guarded block to
every accelerator, right for ``model.cuda()`` (ported to ``model.to(accel.device())``) and
wrong for a block that holds CUDA-only code: ``torch.cuda.get_device_capability()`` then
runs on the emulated neuron device and stops with "Torch not compiled with CUDA enabled".

:func:`guard_what_it_guards` looks at the CUDA side of each such ``if`` (:mod:`..guarded`: the
body of ``if torch.cuda.is_available():``, the ``else`` branch of ``if not
torch.cuda.is_available():`` and, when its body ends in ``return``/``raise``/``continue``/``break``,
the rest of the block after it): where it holds a site a rule reports as needing a person, the test becomes
``accel.device_type() == "cuda"`` (``!=`` for the negated one), so the block runs where it ran
before and nowhere else. Guarded rewrites on the CUDA side (``accel.manual_seed(s) if
accel.is_accelerator_available() else None``) lose the repeated test there.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable

from ..apis import SAME, call
from ..findings import Finding
from ..fixes import Replace
from ..guarded import cuda_only_lines, cuda_sides, drop_repeated_guards
from .base import Rule

AVAILABLE = "torch.cuda.is_available"
#: The tests a guard around CUDA-only code keeps (true exactly where CUDA is the backend).
CUDA_ONLY = 'accel.device_type() == "cuda"'
NOT_CUDA = 'accel.device_type() != "cuda"'
Qualname = Callable[[ast.AST], "str | None"]
Span = Callable[[ast.AST], "tuple[int, int, int, int]"]


def _availability(test: ast.AST, qualname: Qualname) -> tuple[ast.Call, ast.AST, bool] | None:
    """``(the is_available call, the node the CUDA-only test replaces, whether the body is the CUDA side)``."""

    def is_call(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and not node.args and qualname(node.func) == AVAILABLE

    if is_call(test):
        return test, test, True  # type: ignore[return-value]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and is_call(test.operand):
        return test.operand, test, False  # type: ignore[return-value]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            if is_call(value):
                return value, value, True  # type: ignore[return-value]
    return None


def guard_what_it_guards(tree: ast.AST, qualname: Qualname, span: Span, findings: list[Finding]) -> list[Finding]:
    """``findings`` with each ``torch.cuda.is_available()`` guard fitted to what it guards (module docstring)."""
    if not any(f.code == "ACC121" for f in findings):
        return findings
    by_start = {(f.line, f.col, f.code): i for i, f in enumerate(findings)}
    out = list(findings)
    for call_node, whole, positive, side in cuda_sides(tree, lambda test: _availability(test, qualname)):
        drop_repeated_guards(out, side)
        cuda_only = cuda_only_lines(out, side)
        if not cuda_only:
            continue
        assert isinstance(call_node, ast.Call)
        line, col, _, _ = span(call_node.func)
        at = by_start.get((line, col + 1, "ACC121"))
        if at is None or out[at].fix is None:
            continue
        text = CUDA_ONLY if positive else NOT_CUDA
        out[at] = dataclasses.replace(
            out[at],
            fix=Replace(text=text).at(span(whole)),
            message=f"{RULE.message}: guards CUDA-only code (line {cuda_only[0]})",
            suggestion=f"{text}: the block runs only where it ran before",
        )
    return out


RULE = Rule(
    "ACC121",
    "cuda-api",
    "torch.cuda.is_available()",
    "accel.is_accelerator_available() (False on the cpu backend)",
    portable=True,
    apis=(call("torch.cuda.is_available", "accel.is_accelerator_available", SAME),),
    examples=(
        ("ok = torch.cuda.is_available()", "ok = accel.is_accelerator_available()"),
        ("if torch.cuda.is_available():\n    print(torch.cuda.get_device_capability())", 'if accel.device_type() == "cuda":'),
        ("if not torch.cuda.is_available():\n    print('cpu')\nelse:\n    torch.cuda.ipc_collect()", 'if accel.device_type() != "cuda":'),
        ("if torch.cuda.is_available():\n    torch.cuda.manual_seed(0)", "    accel.manual_seed(0)"),
        ("assert torch.cuda.is_available()\nprint(torch.cuda.get_device_capability())", 'assert accel.device_type() == "cuda"'),
        (
            "cap = torch.cuda.get_device_capability() if torch.cuda.is_available() else None",
            'cap = torch.cuda.get_device_capability() if accel.device_type() == "cuda" else None',
        ),
    ),
)
