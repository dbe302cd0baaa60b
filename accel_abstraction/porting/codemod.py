"""Rewrite the portable sites a scan found, losslessly, with libcst.

The scanner decides *what* to rewrite (each :class:`Finding` carries a :class:`Fix` with
the span of the node); this module decides *how*.  Nodes are matched by their source
span (libcst's ``PositionProvider`` and :mod:`ast` agree on spans, parentheses
excluded), the transformer works bottom-up so nested sites compose in one pass, and
``import accel_abstraction as accel`` is added once, where isort would put it (:mod:`.import_order`).

Why one module of ~450 lines: one libcst transformer whose node handlers share the span
index and the per-file state; the *what* (rules, replacements) lives in :mod:`.mapping`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..requirements import missing

try:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider
except ModuleNotFoundError as _exc:
    raise missing(_exc, "libcst", "accel port (lossless rewriting)") from None

from .cst_edit import Unapplied
from .findings import Finding
from .fixes import DropImport, Fix
from .import_order import long_lines, style_for
from .imports import add_accel_import, drop_dead_imports
from .newlines import as_lf, has_lone_cr, restore_endings
from .rules import Rule
from .scanner import TOO_DEEP, scan_source
from .wrap import wrap_limit, wrap_long_lines

Span = tuple[int, int, int, int]


@dataclass
class PortResult:
    """Outcome of porting one module's text."""

    path: str
    source: str
    output: str
    applied: list[Finding] = field(default_factory=list)
    manual: list[Finding] = field(default_factory=list)  # found but not portable
    error: str | None = None
    written: bool = False  # set by apply.port_file when the file on disk was replaced
    cleaned: list[str] = field(default_factory=list)  # leftover temporary files removed
    long_lines: list[int] = field(default_factory=list)  # lines the port made longer than the file allows
    line_limit: int = 0  # that limit

    @property
    def changed(self) -> bool:
        return self.output != self.source


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, fixes: dict[Span, list[Fix]]) -> None:
        # several fixes at one span apply in order (ACC102's torch.device(...) -> accel.device(i), then ACC172's FSDP device_id)
        super().__init__()
        self.fixes = fixes
        self.applied: set[int] = set()  # ids of the fixes applied
        self._spans = sorted(fixes)
        self.statement_guards: set[int] = set()  # ids of IfExp nodes that guard a whole statement

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Descend only into statements that hold a fix (most of a file holds none).

        Only statements are pruned: an expression's position can leave out parts of it
        (a ``Param``'s span stops before its default), and a definition's may leave out
        its decorators.
        """
        if not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) or isinstance(
            node, (cst.FunctionDef, cst.ClassDef)
        ):
            return True
        pos = self.get_metadata(PositionProvider, node, None)
        if pos is None:
            return True
        start = (pos.start.line, pos.start.column)
        end = (pos.end.line, pos.end.column)
        for line, col, end_line, end_col in self._spans:
            if (line, col) >= start and (end_line, end_col) <= end:
                return True
        return False

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:  # type: ignore[override]
        if isinstance(updated_node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and self.statement_guards:
            return self._guard_statement(updated_node)
        if not isinstance(original_node, (cst.BaseExpression, cst.Assign)):
            return updated_node
        pos = self.get_metadata(PositionProvider, original_node, None)
        if pos is None:
            return updated_node
        span = (pos.start.line, pos.start.column, pos.end.line, pos.end.column)
        new: cst.CSTNode | cst.RemovalSentinel = updated_node
        for fix in self.fixes.get(span, ()):
            if not isinstance(new, cst.CSTNode):
                break
            try:
                new = fix.apply(new)
            except Unapplied:
                continue
            self.applied.add(id(fix))
            if fix.guard == "bare" and (fix.otherwise or "None") == "None":
                # a whole statement guarded with nothing to keep: an if statement, not `x if t else None`
                value = new.value if isinstance(new, cst.Expr) else new
                if isinstance(value, cst.IfExp):
                    self.statement_guards.add(id(value))
        return new

    def _guard_statement(self, node: cst.SimpleStatementLine | cst.SimpleStatementSuite) -> cst.CSTNode:
        """``accel.f(x) if accel.is_accelerator_available() else None`` as a statement becomes
        ``if accel.is_accelerator_available():`` with ``accel.f(x)`` as its body (a one-line
        ``if x: ...`` suite becomes an indented block holding that ``if``)."""
        body = node.body
        if len(body) != 1 or not isinstance(body[0], cst.Expr) or id(body[0].value) not in self.statement_guards:
            return node
        guarded = body[0].value
        assert isinstance(guarded, cst.IfExp)
        statement = body[0].with_changes(value=guarded.body, semicolon=cst.MaybeSentinel.DEFAULT)
        if isinstance(node, cst.SimpleStatementSuite):
            line = cst.SimpleStatementLine(body=[statement], trailing_whitespace=node.trailing_whitespace)
            return cst.IndentedBlock(body=[cst.If(test=guarded.test, body=cst.IndentedBlock(body=[line]))])
        inner = node.with_changes(body=[statement], leading_lines=[])
        return cst.If(test=guarded.test, body=cst.IndentedBlock(body=[inner]), leading_lines=node.leading_lines)


_UNAPPLIED = "manual: automatic rewrite did not apply"
_UNAPPLIED_IMPORT = "manual: the import stays while a use of the name is left to a person"
#: Deeper syntax trees than this are not handed to libcst (real code stays far below: ~40).
MAX_DEPTH = 300


def _depth(tree: ast.AST) -> int:
    """The depth of ``tree``, found without recursion."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _used_names(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _accel_name_clash(source: str) -> int | None:
    """The line where ``accel`` is bound to anything but ``accel_abstraction``, if any."""
    if re.search(r"\baccel\b", source) is None:
        return None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "accel" and not isinstance(node.ctx, ast.Load):
            return node.lineno
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "accel":
            return node.lineno
        if isinstance(node, ast.arg) and node.arg == "accel":
            return node.lineno
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.partition(".")[0]
                if bound == "accel" and not (isinstance(node, ast.Import) and alias.name == "accel_abstraction"):
                    return node.lineno
    return None


def _parses(text: str) -> str | None:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        return f"line {getattr(exc, 'lineno', '?')}: {getattr(exc, 'msg', exc)}"
    return None


def port_source(
    source: str,
    path: str = "<string>",
    enabled: Callable[[str], bool] | None = None,
    max_rounds: int = 3,
    rules: Sequence[Rule] | None = None,
    wrap: bool = True,
) -> PortResult:
    """Rewrite every portable site in ``source``; text without coupling comes back unchanged.

    ``rules``: the rules whose fixes apply (default: the built-in ones; :func:`~.runner.load_rules`
    adds the plugins'). A finding without a fix is listed in ``manual``. ``wrap``: wrap the
    lines the port made longer than the file's limit (:mod:`.wrap`); without it they are only listed.

    Never returns output that fails to parse: on any doubt ``error`` is set and ``output``
    is the original text.
    """
    try:
        if has_lone_cr(source):  # CR-only or mixed endings: ported as LF, each line's ending put back
            result = _port(as_lf(source), path, enabled, max_rounds, rules, wrap)
            changed = result.changed and result.error is None
            result.output = restore_endings(source, result.output) if changed else source
            result.source = source
            return result
        return _port(source, path, enabled, max_rounds, rules, wrap)
    except RecursionError:
        return PortResult(path, source, source, error=f"{path}: {TOO_DEEP}")


def _port(
    source: str, path: str, enabled: Callable[[str], bool] | None, max_rounds: int, rules: Sequence[Rule] | None, wrap: bool
) -> PortResult:
    scanned = scan_source(source, path, rules, enabled=enabled)
    result = PortResult(path, source, source)
    if scanned.error is not None:
        result.error = scanned.error
        return result
    if scanned.notes:  # a plugin rule could not look at the whole file: a port without it is not whole
        result.error = "; ".join(scanned.notes) + "; file left unchanged"
        return result
    if any(f.fix is not None for f in scanned.findings):
        clash = _accel_name_clash(source)
        if clash is not None:
            result.error = f"{path}:{clash}: the name 'accel' is already bound to something else; rename it, then port"
            return result
    findings = scanned.findings
    text = source
    applied: list[Finding] = []
    if not any(f.fix is not None for f in findings):
        used_before: set[str] = set()
    else:
        tree = ast.parse(source)
        if _depth(tree) > MAX_DEPTH:
            # libcst recurses per level (RecursionError), or on some versions takes minutes
            result.error = f"{path}: {TOO_DEEP}"
            return result
        used_before = _used_names(tree)
    style = style_for(path)
    for _ in range(max_rounds):
        todo = [f for f in findings if f.fix is not None]
        if not todo:
            break
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError as exc:
            result.error = f"{path}: libcst cannot parse: {exc.message} (line {exc.raw_line})"
            return result
        drops = {f.fix.name: f for f in todo if isinstance(f.fix, DropImport)}
        at: dict[Span, list[Fix]] = {}
        for f in todo:
            if f.fix is not None and not isinstance(f.fix, DropImport):
                at.setdefault(f.fix.span, []).append(f.fix)
        rewriter = _Rewriter(at)
        new_module = MetadataWrapper(module, unsafe_skip_copy=True).visit(rewriter)
        done = [f for f in todo if id(f.fix) in rewriter.applied]
        if done:
            new_module = add_accel_import(new_module, style)
        text = new_module.code
        problem = _parses(text)
        if problem is not None:
            result.error = f"{path}: rewrite produced invalid Python ({problem}); file left unchanged"
            return result
        dead = (used_before | drops.keys()) - _used_names(ast.parse(text))
        if not done and not dead & drops.keys():
            break
        if dead:
            text = drop_dead_imports(new_module, dead).code
            problem = _parses(text)
            if problem is not None:
                result.error = f"{path}: removing unused imports produced invalid Python ({problem}); file left unchanged"
                return result
        again = scan_source(text, path, rules, enabled=enabled, precheck=False)
        findings = again.findings
        left = {f.fix.name for f in findings if isinstance(f.fix, DropImport)}
        applied.extend(done + [f for name, f in drops.items() if name not in left])
    if text != source:
        if wrap:
            text = wrap_long_lines(source, text, wrap_limit(source, style.line_length))
        result.long_lines = long_lines(source, text, style.line_length)
        result.line_limit = style.line_length or max([88, *map(len, source.splitlines())])
    result.output = text
    result.applied = applied
    result.manual = [f for f in findings if f.fix is None]
    result.manual += [
        Finding(f.path, f.line, f.col, f.end_line, f.end_col, f.code, f.category, f.message, _UNAPPLIED_IMPORT if isinstance(f.fix, DropImport) else _UNAPPLIED)
        for f in findings
        if f.fix is not None
    ]
    return result
