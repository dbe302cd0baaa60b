"""Rewrite the portable sites a scan found, losslessly, with libcst.

The scanner decides *what* to rewrite (each :class:`Finding` carries a :class:`Fix` with
the span of the node); this module decides *how*.  Nodes are matched by their source
span (libcst's ``PositionProvider`` and :mod:`ast` agree on spans, parentheses
excluded), the transformer works bottom-up so nested sites compose in one pass, and
``import accel_abstraction as accel`` is added once, after the leading imports.

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
    import libcst.helpers
    from libcst.metadata import MetadataWrapper, PositionProvider
except ModuleNotFoundError as _exc:
    raise missing(_exc, "libcst", "accel port (lossless rewriting)") from None

from .findings import Finding, Fix
from .mapping import ACCELERATOR_TEST
from .scanner import TOO_DEEP, scan_source

ACCEL_IMPORT = "import accel_abstraction as accel\n"

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

    @property
    def changed(self) -> bool:
        return self.output != self.source


class _Unapplied(Exception):
    """A fix whose node did not have the expected shape."""


def _expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def _call(func: str, *values: cst.BaseExpression) -> cst.Call:
    args = [cst.Arg(v, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for v in values[:-1]]
    args += [cst.Arg(v) for v in values[-1:]]
    return cst.Call(func=_expr(func), args=args)


def _keep_parens(old: cst.BaseExpression, new: cst.BaseExpression) -> cst.BaseExpression:
    if old.lpar and hasattr(new, "lpar"):
        return new.with_changes(lpar=[*old.lpar, *new.lpar], rpar=[*new.rpar, *old.rpar])
    return new


def _without_trailing_comma(args: list[cst.Arg]) -> list[cst.Arg]:
    if args and isinstance(args[-1].comma, cst.Comma):
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return args


def _drop_arg(args: Sequence[cst.Arg], drop: int | str | None) -> list[cst.Arg]:
    kept = list(args)
    if drop is None:
        return kept
    if isinstance(drop, int):
        positional = [i for i, a in enumerate(kept) if a.keyword is None and not a.star]
        if drop >= len(positional):
            raise _Unapplied
        index = positional[drop]
    else:
        index = next((i for i, a in enumerate(kept) if a.keyword is not None and a.keyword.value == drop), -1)
        if index < 0:
            raise _Unapplied
    was_last = index == len(kept) - 1
    del kept[index]
    return _without_trailing_comma(kept) if was_last else kept


def _to_device(node: cst.BaseExpression) -> cst.BaseExpression:
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        raise _Unapplied
    args = list(node.args)
    index_arg = None
    for i, arg in enumerate(args):
        if (arg.keyword is None and not arg.star and i == 0) or (arg.keyword is not None and arg.keyword.value == "device"):
            index_arg = args.pop(i)
            break
    device = _call("accel.device", index_arg.value) if index_arg is not None else _expr("accel.device()")
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if args else cst.MaybeSentinel.DEFAULT
    new_args = [cst.Arg(device, comma=comma), *args]
    return node.with_changes(func=node.func.with_changes(attr=cst.Name("to")), args=new_args)


def _is_cuda(node: cst.BaseExpression, paren: bool) -> cst.BaseExpression:
    if not isinstance(node, cst.Attribute):
        raise _Unapplied
    left = cst.Attribute(value=cst.Attribute(value=node.value, attr=cst.Name("device")), attr=cst.Name("type"))
    # "on an accelerator": false for a CPU tensor, as .is_cuda was on a machine without CUDA
    comparison = cst.Comparison(left=left, comparisons=[cst.ComparisonTarget(cst.NotEqual(), _expr('"cpu"'))])
    if paren:
        comparison = comparison.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return comparison


def _device_from(kind: str, node: cst.BaseExpression) -> cst.BaseExpression:
    inner: cst.BaseExpression | None = None
    if isinstance(node, cst.Call) and len(node.args) == 1 and kind != "device_from_format":
        node = node.args[0].value  # torch.device(f"cuda:{i}") -> its argument
    elif (
        isinstance(node, cst.Call)
        and not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "format")
        and len(node.args) == 1
    ):
        node = node.args[0].value  # torch.device("cuda:{}".format(i)) -> its argument
    if kind == "device_from_fstring" and isinstance(node, cst.FormattedString):
        parts = node.parts
        if len(parts) == 2 and isinstance(parts[1], cst.FormattedStringExpression):
            inner = parts[1].expression
    elif kind == "device_from_concat" and isinstance(node, cst.BinaryOperation):
        right = node.right
        if isinstance(right, cst.Call) and len(right.args) == 1:
            inner = right.args[0].value
    elif kind == "device_from_format" and isinstance(node, cst.Call) and len(node.args) == 1:
        inner = node.args[0].value
    if inner is None:
        raise _Unapplied
    return _call("accel.device", inner)


def _autocast_enabled(node: cst.BaseExpression, callee: str) -> cst.BaseExpression:
    """``torch.cuda.amp.autocast(flag, ...)`` -> ``accel.autocast(enabled=flag, ...)``."""
    if not isinstance(node, cst.Call) or not node.args or node.args[0].keyword is not None or node.args[0].star:
        raise _Unapplied
    first = node.args[0].with_changes(
        keyword=cst.Name("enabled"),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    return node.with_changes(func=_expr(callee), args=[first, *node.args[1:]])


_SIMPLE = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer)


def _guard_value(new: cst.BaseExpression, otherwise: str, paren: bool) -> cst.BaseExpression:
    """``new`` -> ``(new if accel.is_accelerator_available() else otherwise)``."""
    guarded = cst.IfExp(test=_expr(ACCELERATOR_TEST), body=new, orelse=_expr(otherwise))
    if paren:
        guarded = guarded.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return guarded


def _guard_enabled(node: cst.BaseExpression) -> cst.BaseExpression:
    """A call gets ``enabled=... and accel.is_accelerator_available()`` (disabled on the cpu backend)."""
    if not isinstance(node, cst.Call):
        raise _Unapplied
    args = list(node.args)
    test = _expr(ACCELERATOR_TEST)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "enabled":
            value = arg.value
            if not isinstance(value, _SIMPLE) or value.lpar:
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            both = cst.BooleanOperation(left=value, operator=cst.And(), right=test)
            args[i] = arg.with_changes(value=both)
            return node.with_changes(args=args)
    if any(a.star == "**" for a in args):
        raise _Unapplied  # enabled may come in **kwargs
    equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    if args and not isinstance(args[-1].comma, cst.Comma):
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(cst.Arg(test, keyword=cst.Name("enabled"), equal=equal))
    return node.with_changes(args=args)


def _apply(fix: Fix, node: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:
    new = _apply_kind(fix, node)
    if fix.guard == "enabled" and isinstance(new, cst.BaseExpression):
        return _guard_enabled(new)
    if fix.guard in ("value", "bare"):
        if isinstance(new, cst.Expr):
            return new.with_changes(value=_guard_value(new.value, fix.otherwise or "None", paren=False))
        if isinstance(new, cst.BaseExpression):
            return _guard_value(new.with_changes(lpar=[], rpar=[]), fix.otherwise or "None", paren=fix.guard == "value")
    return new


def _apply_kind(fix: Fix, node: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:
    kind = fix.kind
    if kind == "assign_call":
        if not isinstance(node, cst.Assign):
            raise _Unapplied
        return cst.Expr(_call(fix.text, node.value))
    if kind == "drop_statement":
        if not isinstance(node, cst.Assign):
            raise _Unapplied
        return cst.RemoveFromParent()
    if not isinstance(node, cst.BaseExpression):
        raise _Unapplied
    new: cst.BaseExpression
    if kind == "keep":
        return node  # only the guard changes it
    if kind == "replace":
        new = _expr(fix.text)
    elif kind == "rename_call":
        if not isinstance(node, cst.Call):
            raise _Unapplied
        new = node.with_changes(func=_expr(fix.text), args=_drop_arg(node.args, fix.drop))
        return new
    elif kind == "to_device":
        return _to_device(node)
    elif kind == "autocast_enabled":
        return _autocast_enabled(node, fix.text)
    elif kind == "is_cuda":
        new = _is_cuda(node, fix.text == "paren")
    elif kind == "wrap_device":
        new = _call("accel.device", node.with_changes(lpar=[], rpar=[]) if node.lpar else node)
    elif kind.startswith("device_from_"):
        new = _device_from(kind, node)
    else:
        raise _Unapplied
    return _keep_parens(node, new)


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, fixes: dict[Span, Fix]) -> None:
        super().__init__()
        self.fixes = fixes
        self.applied: set[Span] = set()
        self._spans = sorted(fixes)

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
        if not isinstance(original_node, (cst.BaseExpression, cst.Assign)):
            return updated_node
        pos = self.get_metadata(PositionProvider, original_node, None)
        if pos is None:
            return updated_node
        span = (pos.start.line, pos.start.column, pos.end.line, pos.end.column)
        fix = self.fixes.get(span)
        if fix is None:
            return updated_node
        try:
            new = _apply(fix, updated_node)
        except _Unapplied:
            return updated_node
        self.applied.add(span)
        return new


def _has_accel_import(module: cst.Module) -> bool:
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        name = alias.evaluated_name
                        asname = alias.evaluated_alias
                        if name == "accel_abstraction" and asname == "accel":
                            return True
    return False


def _is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def add_accel_import(module: cst.Module) -> cst.Module:
    """Insert ``import accel_abstraction as accel`` after the docstring and leading imports."""
    if _has_accel_import(module):
        return module
    body = list(module.body)
    index = 0
    if body and _is_docstring(body[0]):
        index = 1
    while index < len(body) and _is_import_line(body[index]):
        index += 1
    body.insert(index, cst.parse_statement(ACCEL_IMPORT))
    return module.with_changes(body=body)


#: Imports from these modules are dropped once porting removed every use of what they bind.
_CUDA_MODULES = ("torch.cuda", "torch.backends.cudnn", "torch.backends.cuda")


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


class _DropDeadImports(cst.CSTTransformer):
    """Remove names imported from CUDA modules that nothing uses any more."""

    def __init__(self, dead: set[str]) -> None:
        super().__init__()
        self.dead = dead

    def _keep(self, small: cst.BaseSmallStatement) -> cst.BaseSmallStatement | None:
        if isinstance(small, cst.ImportFrom):
            if small.relative or small.module is None or isinstance(small.names, cst.ImportStar):
                return small
            module = cst.helpers.get_full_name_for_node(small.module) or ""
            aliases = list(small.names)
        elif isinstance(small, cst.Import):
            module, aliases = "", list(small.names)
        else:
            return small
        kept = []
        for alias in aliases:
            full = f"{module}.{alias.evaluated_name}" if module else alias.evaluated_name
            bound = alias.evaluated_alias or (alias.evaluated_name if module else None)
            if not (full.startswith(_CUDA_MODULES) and bound in self.dead):
                kept.append(alias)
        if len(kept) == len(aliases):
            return small
        if not kept:
            return None
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return small.with_changes(names=kept)

    def leave_SimpleStatementLine(  # noqa: N802 - libcst's visitor naming
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        body = [kept for small in updated_node.body if (kept := self._keep(small)) is not None]
        if len(body) == len(updated_node.body) and all(a is b for a, b in zip(body, updated_node.body, strict=True)):
            return updated_node
        if body:
            body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            return updated_node.with_changes(body=body)
        if any(line.comment is not None for line in updated_node.leading_lines):
            return updated_node  # keep the comment's anchor rather than lose the comment
        return cst.RemoveFromParent()


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
) -> PortResult:
    """Rewrite every portable site in ``source``; text without coupling comes back unchanged.

    Never returns output that fails to parse: on any doubt ``error`` is set and ``output``
    is the original text.
    """
    try:
        return _port(source, path, enabled, max_rounds)
    except RecursionError:
        return PortResult(path, source, source, error=f"{path}: {TOO_DEEP}")


def _port(source: str, path: str, enabled: Callable[[str], bool] | None, max_rounds: int) -> PortResult:
    scanned = scan_source(source, path, enabled=enabled)
    result = PortResult(path, source, source)
    if scanned.error is not None:
        result.error = scanned.error
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
    for _ in range(max_rounds):
        todo = [f for f in findings if f.fix is not None]
        if not todo:
            break
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError as exc:
            result.error = f"{path}: libcst cannot parse: {exc.message} (line {exc.raw_line})"
            return result
        rewriter = _Rewriter({f.fix.span: f.fix for f in todo if f.fix is not None})
        new_module = MetadataWrapper(module, unsafe_skip_copy=True).visit(rewriter)
        done = [f for f in todo if f.fix is not None and f.fix.span in rewriter.applied]
        if not done:
            break
        applied.extend(done)
        new_module = add_accel_import(new_module)
        text = new_module.code
        problem = _parses(text)
        if problem is not None:
            result.error = f"{path}: rewrite produced invalid Python ({problem}); file left unchanged"
            return result
        dead = used_before - _used_names(ast.parse(text))
        if dead:
            text = new_module.visit(_DropDeadImports(dead)).code
            problem = _parses(text)
            if problem is not None:
                result.error = f"{path}: removing unused imports produced invalid Python ({problem}); file left unchanged"
                return result
        again = scan_source(text, path, enabled=enabled, precheck=False)
        findings = again.findings
    result.output = text
    result.applied = applied
    result.manual = [f for f in findings if f.fix is None]
    result.manual += [
        Finding(f.path, f.line, f.col, f.end_line, f.end_col, f.code, f.category, f.message, "manual: automatic rewrite did not apply")
        for f in findings
        if f.fix is not None
    ]
    return result
