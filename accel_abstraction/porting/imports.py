"""The import edits of ``accel port``, made with libcst's own visitors.

``import accel_abstraction as accel`` is added once (libcst's ``AddImportsVisitor``: after a
docstring and the leading block of imports, not when the module already has it), and the
names a port left unused are removed from imports of CUDA modules (``RemoveImportsVisitor``,
which removes a name only when scope analysis shows nothing uses it).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..requirements import missing

try:
    import libcst as cst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
    from libcst.helpers import get_full_name_for_node
except ModuleNotFoundError as _exc:
    raise missing(_exc, "libcst", "accel port (lossless rewriting)") from None

#: Imports from these modules are dropped once porting removed every use of what they bind.
CUDA_MODULES = ("torch.cuda", "torch.backends.cudnn", "torch.backends.cuda")


class _AddImports(AddImportsVisitor):
    """``AddImportsVisitor`` that leaves the spacing of the file's own statements as it was
    (libcst puts a blank line before the first statement after the imports)."""

    def _insert_empty_line(self, statements: list[cst.SimpleStatementLine | cst.BaseCompoundStatement]) -> list[cst.SimpleStatementLine | cst.BaseCompoundStatement]:  # type: ignore[override]
        return statements


def add_accel_import(module: cst.Module) -> cst.Module:
    """``module`` with ``import accel_abstraction as accel`` after its docstring and leading imports."""
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, "accel_abstraction", asname="accel")
    return _AddImports(context).transform_module(module)


def _dead_aliases(small: cst.BaseSmallStatement, dead: set[str]) -> list[tuple[str, str | None, str | None]]:
    """``(module, name, asname)`` of the names ``small`` imports from a CUDA module that are in ``dead``."""
    if isinstance(small, cst.ImportFrom):
        if small.relative or small.module is None or isinstance(small.names, cst.ImportStar):
            return []
        module = get_full_name_for_node(small.module) or ""
        found: list[tuple[str, str | None, str | None]] = []
        for alias in small.names:
            bound = alias.evaluated_alias or alias.evaluated_name
            if f"{module}.{alias.evaluated_name}".startswith(CUDA_MODULES) and bound in dead:
                found.append((module, alias.evaluated_name, alias.evaluated_alias))
        return found
    if isinstance(small, cst.Import):
        return [
            (alias.evaluated_name, None, alias.evaluated_alias)
            for alias in small.names
            if alias.evaluated_alias in dead and alias.evaluated_name.startswith(CUDA_MODULES)
        ]
    return []


class _FindDeadImports(cst.CSTVisitor):
    def __init__(self, dead: set[str]) -> None:
        super().__init__()
        self.dead = dead
        self.remove: list[tuple[str, str | None, str | None]] = []

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:  # noqa: N802 - libcst's naming
        found = [_dead_aliases(small, self.dead) for small in node.body]
        whole = all(isinstance(s, (cst.Import, cst.ImportFrom)) and len(f) == len(_names(s)) for s, f in zip(node.body, found, strict=True))
        if whole and any(line.comment is not None for line in node.leading_lines):
            return False  # the line would go: keep it as the comment's anchor rather than lose the comment
        self.remove += [entry for entries in found for entry in entries]
        return False


def _names(small: cst.BaseSmallStatement) -> Sequence[cst.ImportAlias]:
    names = getattr(small, "names", ())
    return () if isinstance(names, cst.ImportStar) else names


def drop_dead_imports(module: cst.Module, dead: set[str]) -> cst.Module:
    """``module`` without the names in ``dead`` imported from :data:`CUDA_MODULES` (an import line
    with a comment above it that would disappear whole is kept)."""
    finder = _FindDeadImports(dead)
    module.visit(finder)
    if not finder.remove:
        return module
    context = CodemodContext()
    for name, obj, asname in finder.remove:
        RemoveImportsVisitor.remove_unused_import(context, name, obj, asname)
    return RemoveImportsVisitor(context).transform_module(module)
