"""What a guard guards: the CUDA side of an ``if`` and whether it holds CUDA-only code.

A port must not change where a block runs on the machine the program ran on, and a guard's
rewrite looks at the block it guards. Two rules rewrite guards: ACC121
(``if torch.cuda.is_available():``) and ACC113 (``if device_type == "cuda":``). Both ask the same
questions here:

- :func:`cuda_sides`: for each ``if`` whose test a rule recognises, the *CUDA side*: the body
  of a positive test (of ``a if test else b`` too: ``a``; ``b`` for a negated test); for a negated one (``not torch.cuda.is_available()``,
  ``device_type != "cuda"``) the ``else`` branch and, when the body ends in
  ``return``/``raise``/``continue``/``break``, the rest of the block after the ``if``; for
  ``assert torch.cuda.is_available()`` / ``assert device_type in ["cuda", "cpu"]`` the rest of
  the block after the assertion;
- :func:`cuda_only_lines`: the lines on that side holding *CUDA-only code*, a site some rule
  reports as needing a person (a finding without a fix: ``torch.cuda.get_device_capability()``,
  an NVTX range, FP8 training). Where there is one, the guard must stay true exactly where it
  was true before, not on every accelerator;
- :func:`drop_repeated_guards`: guarded rewrites on the CUDA side of a test that implies an
  accelerator (``accel.manual_seed(s) if accel.is_accelerator_available() else None``) lose the
  repeated test there.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterator

from .findings import Finding

_ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)

#: ``classify(test)``: ``(the node a finding marks, the node a rewrite replaces, whether the body is
#: the CUDA side)`` for an ``if`` test the rule recognises, else ``None``.
Classify = Callable[[ast.AST], "tuple[ast.AST, ast.AST, bool] | None"]


def _blocks(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


#: Where a CUDA side lies: ``(line, col, end_line, end_col)``, lines 1-based, columns 0-based as in :mod:`ast`.
Side = tuple[int, int, int, int]


def _side(first: ast.AST, last: ast.AST) -> Side:
    return (first.lineno, first.col_offset, last.end_lineno or last.lineno, last.end_col_offset or 0)  # type: ignore[attr-defined]


def cuda_sides(tree: ast.AST, classify: Classify) -> Iterator[tuple[ast.AST, ast.AST, bool, Side]]:
    """Each ``if``, ``assert`` or ``a if test else b`` whose test ``classify`` recognises: its marked node,
    the node to replace, polarity, where its CUDA side lies."""
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp):
            found = classify(node.test)
            if found is not None:
                branch = node.body if found[2] else node.orelse
                yield (*found, _side(branch, branch))
    for block in _blocks(tree):
        for i, stmt in enumerate(block):
            if not isinstance(stmt, (ast.If, ast.Assert)):
                continue
            found = classify(stmt.test)
            if found is None:
                continue
            marked, whole, positive = found
            if isinstance(stmt, ast.Assert):
                if not positive:
                    continue
                side = block[i + 1 :]  # an assertion guards the rest of its block
            elif positive:
                side = stmt.body
            else:
                side = list(stmt.orelse) + (block[i + 1 :] if isinstance(stmt.body[-1], _ENDS) else [])
            if side:
                yield marked, whole, positive, _side(side[0], side[-1])


def _inside(f: Finding, side: Side) -> bool:
    line, col, end_line, end_col = side
    return (line, col) <= (f.line, f.col - 1) and (f.end_line, f.end_col - 1) <= (end_line, end_col)


def cuda_only_lines(findings: list[Finding], side: Side) -> list[int]:
    """Lines of the findings on ``side`` that need a person: CUDA-only code there."""
    return sorted({f.line for f in findings if f.fix is None and _inside(f, side)})


def drop_repeated_guards(findings: list[Finding], side: Side) -> None:
    """Rewrites on ``side`` that ask ``accel.is_accelerator_available()`` first stop asking (in place)."""
    for i, f in enumerate(findings):
        fix = f.fix
        if fix is not None and fix.guard in ("value", "bare") and _inside(f, side):
            findings[i] = dataclasses.replace(f, fix=dataclasses.replace(fix, guard=""),
                                              suggestion=(f.suggestion or "").split(" if accel.")[0])  # fmt: skip
