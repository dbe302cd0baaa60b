"""Find CUDA coupling in Python source with :mod:`ast`; never imports or runs the code.

:func:`scan_source` is the whole analysis for one file: one traversal (:class:`Scan`, the node
handlers) over the per-file state (:mod:`.context`). The traversal finds no coupling itself: it
hands each shape to the checks the rules declare for it (``Rule.calls`` by callee, ``Rule.visits``
by method, keyword, string, default, dict key, attribute: one dispatch table,
:data:`~.rules.VISITS`), to the API table's checks (:mod:`.apichecks`) and to the value positions
(:mod:`.devices`), which hand device, backend and environment values to the rules' shape checks.
Every code is reported from its own rule file (``rules/accNNN_*.py``).

Strings are only examined where their parent puts them in a *device position*
(``device=``, ``.to(...)``, ``torch.device(...)``, an assignment to a ``*device*`` name,
...) or where their shape is unmistakable (``f"cuda:{i}"``, ``"nccl"``), so comments,
docstrings, log and help text are never reported.  A device-type test
(``x.device.type == "cuda"``) is reported and so is what it guards; a
``pin_memory`` inside an accelerator guard is not.  Code that asks ``accel`` or
``torch.accelerator`` for the device type is intentional and left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from .apichecks import ApiChecks
from .context import OWN, reported
from .findings import FileResult, Finding
from .guards import (
    DEVICE_NAME,
    ENV_CALLS,
    assigned_strings,
    callee,
    is_cuda_string,
    iterated_strings,
    last_name,
    own_returns,
    str_value,
)
from .mapping import CALLS
from .prefilter import might_couple, touches
from .rules import BUILTIN_RULES, VISITS, Match, Rule, acc113_device_type_test, acc121_is_available
from .rules.acc113_device_type_test import check_device_test
from .rules.acc132_autocast_cuda import AUTOCAST, autocast_like
from .rules.acc171_nccl_backend import BACKEND_NAME
from .rules.acc208_peak_flops import about_peak, check_peak_flops
from .rules.base import CallCheck

#: Qualified callee -> the check of the built-in rule that examines its calls (``Rule.calls``).
CALL_CHECKS: dict[str, CallCheck] = {name: check for rule in BUILTIN_RULES for name, check in rule.calls.items()}
#: Calls whose first positional argument is a device.
_TAKES_DEVICE_FIRST = {"torch.set_default_device", "torch.Generator"}
#: Calls whose string arguments are text for people (logs, warnings, output).
_TEXT_SINKS = frozenset({"print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "write"})
#: Why a file CPython parses can still not be analysed (180 nested calls, a deep literal).
TOO_DEEP = "too deeply nested to analyse (thousands of nested or chained expressions); this file is skipped, the others are not"


#: Plugin of each plugin rule, by code (set by :func:`~.runner.load_rules`): named when its matcher raises.
RULE_PLUGINS: dict[str, str] = {}


class Scan(ApiChecks):
    """One pass over one module's tree: the node handlers."""

    #: Codes of plugin rules whose matcher raised in this file: not asked again here.
    disabled: set[str]
    #: One line per rule disabled in this file, naming plugin and rule.
    notes: list[str]

    # ---- traversal
    def run(self) -> list[Finding]:
        self.disabled = set()
        self.notes = []
        handlers: dict[type, Callable[[ast.AST], bool]] = {
            ast.Call: self.visit_call,  # type: ignore[dict-item]
            ast.Attribute: self.visit_attribute,  # type: ignore[dict-item]
            ast.Name: self.visit_name,  # type: ignore[dict-item]
            ast.Assign: self.visit_assign,  # type: ignore[dict-item]
            ast.AnnAssign: self.visit_annassign,  # type: ignore[dict-item]
            ast.Subscript: self.visit_subscript,  # type: ignore[dict-item]
            ast.Compare: self.visit_compare,  # type: ignore[dict-item]
            ast.If: self.visit_if,  # type: ignore[dict-item]
            ast.For: self.visit_for,  # type: ignore[dict-item]
            ast.Import: self.visit_import,  # type: ignore[dict-item]
            ast.ImportFrom: self.visit_import_from,  # type: ignore[dict-item]
            ast.FunctionDef: self.visit_function,  # type: ignore[dict-item]
            ast.AsyncFunctionDef: self.visit_function,  # type: ignore[dict-item]
            ast.Dict: self.visit_dict,  # type: ignore[dict-item]
            ast.Constant: self.visit_constant,  # type: ignore[dict-item]
            ast.JoinedStr: self.visit_runtime_string,  # type: ignore[dict-item]
            ast.BinOp: self.visit_runtime_string,  # type: ignore[dict-item]
            ast.Expr: self.visit_expr,  # type: ignore[dict-item]
            ast.IfExp: self.visit_ifexp,  # type: ignore[dict-item]
        }
        stack: list[ast.AST] = [self.tree]
        self.stack = stack
        iter_children = ast.iter_child_nodes
        hot = self.hot
        stmt = ast.stmt
        while stack:
            node = stack.pop()
            if hot is not None and isinstance(node, stmt) and not touches(node, hot):
                continue
            handler = handlers.get(type(node))
            if handler is None or handler(node):
                stack.extend(iter_children(node))
        findings = acc121_is_available.guard_what_it_guards(self.tree, self.aliases.qualname, self.span, self.findings)
        return acc113_device_type_test.guard_what_it_guards(self.tree, self.span, findings)

    def push(self, *nodes: ast.AST | None) -> None:
        self.stack.extend(n for n in nodes if n is not None)

    def push_call_args(self, call: ast.Call) -> None:
        self.stack.extend(call.args)
        self.stack.extend(kw.value for kw in call.keywords)

    # ---- node handlers (return True to visit all children)
    def visit_call(self, node: ast.Call) -> bool:
        func = node.func
        self.whole_values.update(id(a) for a in node.args)
        self.whole_values.update(id(k.value) for k in node.keywords)
        if last_name(func) in _TEXT_SINKS:
            # text for people: a "cuda:0" there is a message, not a device
            self.done.update(id(a) for a in (*node.args, *(k.value for k in node.keywords)))
        q = self.aliases.qualname(func)
        for rule in self.plugin_matchers:
            self.plugin_match(rule, node)
        if q is not None:
            row = CALLS.get(q)
            if row is not None:
                self.api_call(node, row)
                self.push_call_args(node)
                return False
            check = CALL_CHECKS.get(q)
            if check is not None:
                check(self, node)
                self.push_call_args(node)
                return False
            if q in _TAKES_DEVICE_FIRST and node.args:
                self.device_value(node.args[0])
            if q in ENV_CALLS and node.args:
                self.env_name(node.args[0])
            for visit in VISITS.get("call:" + q, ()):
                visit(self, node)
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) == 3:
            # getattr(obj, "device", "cuda"): the default is a device string
            if DEVICE_NAME.search(str_value(node.args[1]) or ""):
                self.device_value(node.args[2], string_typed=True)
        if q not in AUTOCAST and q not in CALLS and autocast_like(self, node, q):
            return True
        if isinstance(func, ast.Attribute):
            self.call_positions(node, func.attr)
            for visit in VISITS.get("method:" + func.attr, ()):
                if visit(self, node, q):
                    return False
        for kw in node.keywords:
            name = kw.arg
            if name is None:
                continue
            self.keyword_position(name, kw.value)
            for visit in VISITS.get("keyword:" + name, ()):
                visit(self, node, kw, q)
        return True

    def plugin_match(self, rule: Rule, node: ast.AST) -> None:
        """Ask a plugin rule's matcher about ``node``; one that raises is disabled for this file
        (one note names plugin, rule and line) and the scan goes on."""
        assert rule.matcher is not None
        if rule.code in self.disabled:
            return
        try:
            found = rule.matcher(node, self)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a plugin's bug costs its rule in this file, not the scan
            self.disabled.add(rule.code)
            plugin = RULE_PLUGINS.get(rule.code, "unknown")
            self.notes.append(
                f"{self.path}:{getattr(node, 'lineno', 1)}: rule {rule.code} of plugin {plugin!r} raised "
                f"{type(exc).__name__}: {exc}; the rule is disabled for this file (report it to the plugin's authors)"
            )
            return
        if isinstance(found, Match):
            suggestion = rule.suggestion if found.fix is not None else rule.suggestion or "no portable equivalent"
            self.report(node, rule.code, found.detail or None, found.fix, rule=rule, suggestion=suggestion)
        elif found is not None:
            self.report(node, rule.code, found or None, rule=rule, suggestion=rule.suggestion or "no portable equivalent")

    def visit_attribute(self, node: ast.Attribute) -> bool:
        for rule in self.plugin_matchers:
            self.plugin_match(rule, node)
        visits = VISITS.get("attribute:" + node.attr)
        if visits:
            for visit in visits:
                visit(self, node)
            return True
        q = self.aliases.qualname(node)
        if q is None:
            return True
        return self.reference(node, q)

    def visit_name(self, node: ast.Name) -> bool:
        if not isinstance(node.ctx, ast.Load):
            return False
        q = self.aliases.names.get(node.id)
        if q is None or q == node.id:
            return False
        self.reference(node, q)
        return False

    def visit_constant(self, node: ast.Constant) -> bool:
        self.constant(node)
        return False

    def visit_runtime_string(self, node: ast.AST) -> bool:
        self.runtime_string(node)
        return True

    def visit_ifexp(self, node: ast.IfExp) -> bool:
        """``X if accel.is_accelerator_available() else "nccl"``: what a port keeps for the cpu backend, on purpose."""
        if self.intentional(node.test, OWN):
            self.done.update(id(sub) for sub in ast.walk(node.orelse))
        return True

    def visit_expr(self, node: ast.Expr) -> bool:
        self.whole_values.add(id(node.value))
        # A bare string statement is a docstring or a comment in disguise.
        return not isinstance(node.value, (ast.Constant, ast.JoinedStr))

    def _flag_assign(self, target: ast.AST, value: ast.AST | None, stmt: ast.AST, single: bool) -> bool:
        if self.flag_assign(target, value, stmt, single):
            return True
        name = last_name(target)
        if name is not None and value is not None:
            if DEVICE_NAME.search(name) or (is_cuda_string(value) and name in self.device_args):
                self.device_value(value, string_typed=True)
            elif BACKEND_NAME.search(name):
                self.backend_value(value)
            elif about_peak(name):
                check_peak_flops(self, target, name, value)
        return False

    def visit_assign(self, node: ast.Assign) -> bool:
        self.whole_values.add(id(node.value))
        single = len(node.targets) == 1
        if self.env_key_names:
            for target in node.targets:
                for value in assigned_strings(target, node.value, self.env_key_names):
                    self.env_name(value, paren=value is not node.value)
        for target in node.targets:
            if self._flag_assign(target, node.value, node, single):
                self.push(node.value)
                return False
        return True

    def visit_annassign(self, node: ast.AnnAssign) -> bool:
        # the annotation is a type, not code that runs on a device: ``start: Optional[torch.cuda.Event]``
        if not self._flag_assign(node.target, node.value, node, False):
            self.push(node.target)
        self.push(node.value)
        return False

    def visit_for(self, node: ast.For) -> bool:
        """``for key, value in (("NCCL_DEBUG", "INFO"), ...): os.environ[key] = value``."""
        if self.env_key_names:
            for value in iterated_strings(node.target, node.iter, self.env_key_names):
                self.env_name(value, paren=True)
        return True

    def visit_subscript(self, node: ast.Subscript) -> bool:
        if self.aliases.qualname(node.value) == "os.environ":
            self.env_name(node.slice)
        return True

    def visit_compare(self, node: ast.Compare) -> bool:
        if len(node.comparators) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            if self.aliases.qualname(node.comparators[0]) == "os.environ":
                self.env_name(node.left, paren=True)
        if len(node.comparators) == 1:
            self.compared.update((id(node.left), id(node.comparators[0])))
            # "nccl" compared with something that is no backend setting is a string test, not a backend
            for literal, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
                members = literal.elts if isinstance(literal, (ast.Tuple, ast.List, ast.Set)) else [literal]
                for member in members:
                    if (str_value(member) or "").lower() == "nccl" and (
                        "backend" not in (last_name(callee(other)) or "").lower() or self.intentional(other)
                    ):
                        self.done.add(id(member))
        if check_device_test(self, node):
            for sub in (node.left, *node.comparators):
                if str_value(sub) is not None:
                    self.done.add(id(sub))
                elif isinstance(sub, (ast.Tuple, ast.List, ast.Set)):
                    self.done.update(id(e) for e in sub.elts)
        return True

    def visit_if(self, node: ast.If) -> bool:
        if self._intentional_guard(node.test):
            op = next((s.ops[0] for s in ast.walk(node.test) if isinstance(s, ast.Compare)), None)
            skip_body = isinstance(op, (ast.Eq, ast.In))
            self.push(node.test, *(node.orelse if skip_body else node.body))
            return False
        if self._accelerator_guard(node.test):
            for block in (node.body, node.orelse):
                if block:
                    self.guarded.append((block[0].lineno, block[-1].end_lineno or block[-1].lineno))
        return True

    def visit_import(self, node: ast.Import) -> bool:
        for alias in node.names:
            self.manual_package(node, alias.name)
        return False

    def visit_import_from(self, node: ast.ImportFrom) -> bool:
        if node.module and not node.level:
            self.manual_package(node, node.module)
            self.imported_names(node)
        return False

    def visit_function(self, node: ast.FunctionDef) -> bool:
        if DEVICE_NAME.search(node.name):
            # def get_device(): return "cuda"  - the returned string is a device
            for sub in own_returns(node):
                self.device_value(sub.value, string_typed=True)
        args = node.args
        positional = args.posonlyargs + args.args
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
            self._param_default(arg.arg, default)
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if kw_default is not None:
                self._param_default(arg.arg, kw_default)
        # parameter and return annotations are types, not code that runs on a device
        self.push(*node.decorator_list, *args.defaults, *args.kw_defaults, *node.body)
        return False

    def _param_default(self, name: str, default: ast.AST) -> None:
        if not any(visit(self, name, default) for visit in VISITS.get("default", ())):
            self.named_value(name, default)

    def visit_dict(self, node: ast.Dict) -> bool:
        for key, value in zip(node.keys, node.values, strict=True):
            name = str_value(key)
            if name is not None:
                self.named_value(name, value)
                for visit in VISITS.get("dict:" + name, ()):
                    visit(self, value)
        return True


# --------------------------------------------------------------------------- entry points


def scan_source(
    source: str,
    path: str = "<string>",
    rules: Sequence[Rule] | None = None,
    enabled: Callable[[str], bool] | None = None,
    precheck: bool = True,
) -> FileResult:
    """Scan one module's text.

    Args:
        source: the Python source.
        path: reported as the finding's file.
        rules: the rules to report (:mod:`accel_abstraction.porting.rules`): every built-in
            rule when ``None``; :func:`~.runner.load_rules` gives the built-in and the plugins' ones.
        enabled: ``enabled(code)`` filters reported codes (selection); all when ``None``.
        precheck: skip parsing when a cheap text test shows no rule can fire.
    """
    chosen = BUILTIN_RULES if rules is None else tuple(rules)
    matching = tuple(r for r in chosen if r.matcher is not None or r.names)
    if precheck and not any(not r.precheck for r in matching):
        extra = [s for r in matching for s in r.precheck]
        if not might_couple(source, extra):
            return FileResult(path, skipped=True)
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"{path}:{line}" if line else path
        return FileResult(path, error=f"{where}: cannot parse: {getattr(exc, 'msg', exc)}")
    except (RecursionError, MemoryError):
        return FileResult(path, error=f"{path}: {TOO_DEEP}")
    scan = Scan(source, path, tree, matching)
    try:
        findings = scan.run()
    except RecursionError:
        return FileResult(path, error=f"{path}: {TOO_DEEP}")
    if chosen is not BUILTIN_RULES:
        wanted = {r.code for r in chosen}
        findings = [f for f in findings if f.code in wanted]
    return FileResult(path, reported(findings, source, enabled), notes=scan.notes)
