"""The import edits of ``accel port``, made with libcst's own visitors.

``import accel_abstraction as accel`` is added once, where isort/ruff would put it among the
leading imports (:mod:`.import_order`; libcst's ``AddImportsVisitor`` after the docstring in
a module without imports; not when the module already has it), and the
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

from .import_order import ImportStyle, place_accel_import

#: Imports from these modules are dropped once porting removed every use of what they bind.
CUDA_MODULES = ("torch.cuda", "torch.backends.cudnn", "torch.backends.cuda")


class _AddImports(AddImportsVisitor):
    """``AddImportsVisitor`` that leaves the spacing of the file's own statements as it was
    (libcst puts a blank line before the first statement after the imports)."""

    def _insert_empty_line(self, statements: list[cst.SimpleStatementLine | cst.BaseCompoundStatement]) -> list[cst.SimpleStatementLine | cst.BaseCompoundStatement]:  # type: ignore[override]
        return statements


def _import_block_end(module: cst.Module) -> int:
    """The index after the docstring and the leading block of one-import lines: where
    ``AddImportsVisitor`` looks for existing imports and puts new ones."""
    body = module.body
    index = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1:
        first = body[0].body[0]
        if isinstance(first, cst.Expr) and isinstance(first.value, cst.SimpleString):
            index = 1  # a docstring
        elif isinstance(first, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == "__strict__" for t in first.targets
        ):
            index = 1
    while index < len(body):
        line = body[index]
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
            break
        if not isinstance(line.body[0], (cst.Import, cst.ImportFrom)):
            break
        index += 1
    return index


def _docstring_end(module: cst.Module) -> int:
    body = module.body
    if body and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1:
        first = body[0].body[0]
        if isinstance(first, cst.Expr) and isinstance(first.value, cst.SimpleString):
            return 1
    return 0


def add_accel_import(module: cst.Module, style: ImportStyle | None = None) -> cst.Module:
    """``module`` with ``import accel_abstraction as accel`` where isort would put it in its leading imports
    (:mod:`.import_order`, with the project's ``style``), or after the docstring in a module without imports.

    The visitor runs on that head of the module only, which is all it reads or changes
    (a whole-module run copies and walks every node: most of a port's time on a large file).
    """
    end = _import_block_end(module)
    placed = place_accel_import(module, _docstring_end(module), end, style or ImportStyle())
    if placed is not None:
        return placed
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, "accel_abstraction", asname="accel")
    head = _AddImports(context).transform_module(module.with_changes(body=module.body[:end]))
    return module.with_changes(body=[*head.body, *module.body[end:]])


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


Removal = tuple[str, "str | None", "str | None"]


class _FindDeadImports(cst.CSTVisitor):
    """The import lines holding dead names, each with what to remove from it."""

    def __init__(self, dead: set[str]) -> None:
        super().__init__()
        self.dead = dead
        self.lines: list[tuple[cst.SimpleStatementLine, list[Removal]]] = []

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:  # noqa: N802 - libcst's naming
        found = [_dead_aliases(small, self.dead) for small in node.body]
        removals = [entry for entries in found for entry in entries]
        if not removals:
            return False
        whole = all(isinstance(s, (cst.Import, cst.ImportFrom)) and len(f) == len(_names(s)) for s, f in zip(node.body, found, strict=True))
        if whole and any(line.comment is not None for line in node.leading_lines):
            return False  # the line would go: keep it as the comment's anchor rather than lose the comment
        self.lines.append((node, removals))
        return False


def _names(small: cst.BaseSmallStatement) -> Sequence[cst.ImportAlias]:
    names = getattr(small, "names", ())
    return () if isinstance(names, cst.ImportStar) else names


class _ReplaceLines(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, cst.SimpleStatementLine | cst.RemovalSentinel]) -> None:
        super().__init__()
        self.replacements = replacements

    def leave_SimpleStatementLine(  # noqa: N802 - libcst's naming
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        return self.replacements.get(id(original_node), updated_node)


def drop_dead_imports(module: cst.Module, dead: set[str]) -> cst.Module:
    """``module`` without the names in ``dead`` imported from :data:`CUDA_MODULES` (an import line
    with a comment above it that would disappear whole is kept).

    ``dead`` are names the port left unreferenced (the codemod compares the names used before
    and after).  ``RemoveImportsVisitor`` edits each import line that holds one (the names,
    commas and semicolons, or the whole line), run on that line alone: its scope analysis of
    a whole module costs more than the rest of a port.
    """
    finder = _FindDeadImports(dead)
    module.visit(finder)
    if not finder.lines:
        return module
    replacements: dict[int, cst.SimpleStatementLine | cst.RemovalSentinel] = {}
    for line, removals in finder.lines:
        context = CodemodContext()
        for name, obj, asname in removals:
            RemoveImportsVisitor.remove_unused_import(context, name, obj, asname)
        edited = RemoveImportsVisitor(context).transform_module(cst.Module(body=[line])).body
        new = edited[0] if edited else cst.RemoveFromParent()
        replacements[id(line)] = new if isinstance(new, (cst.SimpleStatementLine, cst.RemovalSentinel)) else line
    return module.visit(_ReplaceLines(replacements))
