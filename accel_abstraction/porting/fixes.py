"""Typed fixes: how ``accel port`` rewrites one site, each kind a class with its own ``apply``.

The scanner builds a fix where it reports a finding (:meth:`.reporting.Reporter.report` fills
in the span); :mod:`.codemod` finds the libcst node with that span and calls
:meth:`Fix.apply`.  No string dispatch: a rule with a rewrite of its own defines a
:class:`Fix` subclass next to it (``rules/acc111_cuda_method.py``'s ``ToDevice``), a plugin
rule likewise.  Fixes are plain frozen data, picklable, so findings travel back from worker
processes; libcst is imported only when one is applied.

``guard`` keeps the meaning on the cpu backend (:mod:`.apis`, ``on_cpu``), for every kind:
    ``"value"``: the rewritten expression ``e`` becomes
        ``(e if accel.is_accelerator_available() else otherwise)``;
        ``"bare"``: the same without parentheses (the whole statement or assigned value); a
        whole statement with ``otherwise`` ``None`` becomes ``if accel.is_accelerator_available():``
        holding it (:mod:`.codemod`), never a statement-expression;
    ``"enabled"``: the rewritten call gets ``enabled=... and accel.is_accelerator_available()``
        (``enabled=accel.is_accelerator_available()`` when it had none).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import libcst as cst

Span = tuple[int, int, int, int]


@dataclass(frozen=True, kw_only=True)
class Fix:
    """How ``accel port`` rewrites one site.

    The span is that of the expression (or statement) to rewrite, with 1-based lines and
    0-based *character* columns, the coordinates libcst's ``PositionProvider`` uses; the
    scanner sets it (a rule builds the fix without one).  Subclasses implement
    :meth:`rewrite`; :meth:`apply` adds the ``guard`` (module docstring).
    """

    line: int = 0
    col: int = 0
    end_line: int = 0
    end_col: int = 0
    guard: str = ""
    otherwise: str = ""

    @property
    def span(self) -> Span:
        return (self.line, self.col, self.end_line, self.end_col)

    def at(self, span: Span) -> Fix:
        """This fix placed at ``span``."""
        line, col, end_line, end_col = span
        return dataclasses.replace(self, line=line, col=col, end_line=end_line, end_col=end_col)

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:
        """The node that replaces ``node``; raise :class:`.cst_edit.Unapplied` when its shape is not the expected one."""
        raise NotImplementedError(f"{type(self).__name__} must implement rewrite()")

    def apply(self, node: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:
        """:meth:`rewrite`, then the ``guard``."""
        from . import cst_edit as e

        new = self.rewrite(node)
        if self.guard == "enabled" and isinstance(new, e.cst.BaseExpression):
            return e.guard_enabled(new)
        if self.guard in ("value", "bare"):
            if isinstance(new, e.cst.Expr):
                return new.with_changes(value=e.guard_value(new.value, self.otherwise or "None", paren=False))
            if isinstance(new, e.cst.BaseExpression):
                return e.guard_value(
                    new.with_changes(lpar=[], rpar=[]), self.otherwise or "None", paren=self.guard == "value"
                )
        return new


def expression(node: Any) -> cst.BaseExpression:
    """``node`` if it is an expression, else :class:`.cst_edit.Unapplied`."""
    from . import cst_edit as e

    if not isinstance(node, e.cst.BaseExpression):
        raise e.Unapplied
    return node


@dataclass(frozen=True, kw_only=True)
class Replace(Fix):
    """The expression becomes ``text`` (inside the parentheses it had)."""

    text: str

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from . import cst_edit as e

        return e.keep_parens(expression(node), e.expr(self.text))


@dataclass(frozen=True, kw_only=True)
class RenameCall(Fix):
    """The call's callee becomes ``callee``; the argument ``drop`` (a position or a keyword name) is removed."""

    callee: str
    drop: int | str | None = None

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from . import cst_edit as e

        if not isinstance(node, e.cst.Call):
            raise e.Unapplied
        return node.with_changes(func=e.expr(self.callee), args=e.drop_arg(node.args, self.drop))


@dataclass(frozen=True, kw_only=True)
class Keep(Fix):
    """The expression stays; only the ``guard`` changes it."""

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        return expression(node)


@dataclass(frozen=True, kw_only=True)
class AssignCall(Fix):
    """The statement ``flag = value`` becomes ``setter(value)``."""

    setter: str

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from . import cst_edit as e

        if not isinstance(node, e.cst.Assign):
            raise e.Unapplied
        return e.cst.Expr(e.call(self.setter, node.value))


@dataclass(frozen=True, kw_only=True)
class DropStatement(Fix):
    """The statement ``flag = value`` is removed (it repeats the previous statement's portable call)."""

    def rewrite(self, node: cst.CSTNode) -> cst.RemovalSentinel:
        from . import cst_edit as e

        if not isinstance(node, e.cst.Assign):
            raise e.Unapplied
        return e.cst.RemoveFromParent()


@dataclass(frozen=True, kw_only=True)
class DropImport(Fix):
    """The imported name ``name`` (``from torch.cuda import device_count as name``) is removed
    once the port has left it unused: :mod:`.codemod` drops it with the dead imports and counts the
    finding applied; a name a person must still port stays, and so does the finding."""

    name: str

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from . import cst_edit as e

        raise e.Unapplied  # never matched by span: removed with the dead imports
