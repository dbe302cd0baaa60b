"""Find CUDA coupling in Python source with :mod:`ast`; never imports or runs the code.

:func:`scan_source` is the whole analysis for one file.  The checks live by theme:

- :mod:`.mapping`: which CUDA APIs are coupling and what replaces them (the table);
- :mod:`.devices`: device strings, integer ordinals, backends, environment, build flags;
- :mod:`.guards`: device-type tests and the names holding device strings (data flow);
- this module: the traversal, API references, flag assignments, imports, suppressions.

Strings are only examined where their parent puts them in a *device position*
(``device=``, ``.to(...)``, ``torch.device(...)``, an assignment to a ``*device*`` name,
...) or where their shape is unmistakable (``f"cuda:{i}"``, ``"nccl"``), so comments,
docstrings, log and help text are never reported.  A device-type test
(``x.device.type == "cuda"``) is reported and so is what it guards; a
``pin_memory`` inside an accelerator guard is not.  Code that asks ``accel`` or
``torch.accelerator`` for the device type is intentional and left alone.

Why this module is still ~650 lines: the traversal keeps the per-file state (aliases,
guarded blocks, suppressions, names holding device strings) that every remaining check
reads; the checks that need none of it moved to :mod:`.devices` and :mod:`.guards`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Sequence

from .aliases import AliasMap
from .devices import DeviceChecks
from .findings import FileResult, Finding
from .fixes import AssignCall, DropStatement, RenameCall, Replace
from .guards import (
    DEVICE_NAME,
    device_positions,
    device_string_names,
    has_keyword,
    is_cuda_string,
    last_name,
    str_value,
)
from .mapping import ACCELERATOR_TEST, CALLS, ENABLED, FLAGS, PACKAGES, lookup, package_row
from .prefilter import BARE_DEVICE, BUILTIN_PRECHECK, hot_lines, might_couple, touches
from .rules import BUILTIN_RULES, Match, Rule
from .rules.acc104_integer_device import cli_option
from .rules.acc111_cuda_method import ToDevice
from .rules.acc112_is_cuda import check_is_cuda
from .rules.acc113_device_type_test import check_device_test, find_device_tests
from .rules.acc131_cuda_amp_autocast import AutocastEnabled
from .rules.acc132_autocast_cuda import AUTOCAST, autocast_like
from .rules.acc133_grad_scaler import GRAD_SCALER
from .rules.acc207_cuda_only_kernel import fused_choices
from .rules.acc208_peak_flops import check_peak_flops
from .rules.base import CallCheck

#: Qualified callee -> the check of the built-in rule that examines its calls (``Rule.calls``).
CALL_CHECKS: dict[str, CallCheck] = {name: check for rule in BUILTIN_RULES for name, check in rule.calls.items()}
ENV_CALLS = {"os.environ.get", "os.getenv", "os.environ.setdefault", "os.environ.pop", "os.putenv", "os.unsetenv"}
CPP_EXTENSION_LOAD = {"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"}
#: Qualified-name prefixes under which the mapping table may hold a manual row.
_TABLE_ROOTS = (
    "torch.cuda",
    "torch.backends.cud",
    "torch.utils.cpp_extension.",
    "torch.version.cuda",
    "torch.profiler.ProfilerActivity.CUDA",
    "torch.autograd.profiler.emit_nvtx",
    "torch._scaled_mm",
    "torch.utils.collect_env.",
)
#: Modules whose imported names are reported on the import line too (a build or an environment report needs a person).
_IMPORT_REPORTED = ("torch.utils.cpp_extension.CUDA_HOME", "torch.utils.collect_env.")
_DIST_BACKEND_ENUM = {"torch.distributed.Backend.NCCL", "torch.distributed.distributed_c10d.Backend.NCCL"}
#: Calls whose first positional argument is a device.
_TAKES_DEVICE_FIRST = {"torch.set_default_device", "torch.Generator"}
#: Accelerator abstractions whose answers code asks on purpose (``accel.device_type() == "cuda"``,
#: DeepSpeed's ``get_accelerator().communication_backend_name() == "nccl"``).
_INTENTIONAL = ("accel_abstraction", "torch.accelerator", "deepspeed.accelerator")
#: Abstractions whose "is it cuda" branch is left unreported: it runs only where the selected backend is cuda.
_OWN = ("accel_abstraction", "torch.accelerator")
#: Calls whose string arguments are text for people (logs, warnings, output).
_TEXT_SINKS = frozenset({"print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "write"})
_BACKEND_NAME = re.compile(r"(^|_)backend$", re.IGNORECASE)
_ACCEL_WORDS = re.compile(r"cuda|gpu|accel", re.IGNORECASE)
#: Why a file CPython parses can still not be analysed (180 nested calls, a deep literal).
TOO_DEEP = "too deeply nested to analyse (thousands of nested or chained expressions); this file is skipped, the others are not"
_SUPPRESS = re.compile(r"#\s*accel:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")
_COUPLED_PREFIXES = ("torch.cuda", "torch.backends.cud", "torch.utils.cpp_extension", "torch.utils.collect_env", *PACKAGES)


def _callee(node: ast.AST) -> ast.AST:
    """``f`` for a call ``f(...)``, else the node itself."""
    return node.func if isinstance(node, ast.Call) else node


def _own_returns(func: ast.AST) -> Iterator[ast.Return]:
    """The ``return`` statements of ``func`` itself (not of functions defined inside it)."""
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _coupled_module(qualname: str) -> bool:
    """Whether an imported name can be coupling on a line that does not say ``cuda``."""
    return qualname.startswith(_COUPLED_PREFIXES) or qualname in GRAD_SCALER


def suppressions(source: str) -> dict[int, frozenset[str] | None]:
    """Line -> suppressed codes (``None``: every code) from ``# accel: ignore[...]`` comments."""
    found: dict[int, frozenset[str] | None] = {}
    if "accel:" not in source:
        return found
    for lineno, text in enumerate(source.splitlines(), start=1):
        if "accel:" not in text:
            continue
        match = _SUPPRESS.search(text)
        if match is None:
            continue
        codes = match.group(1)
        found[lineno] = None if codes is None else frozenset(c.strip() for c in codes.split(",") if c.strip())
    return found


# --------------------------------------------------------------------------- visitor


class Scan(DeviceChecks):
    """One pass over one module's tree."""

    def __init__(self, source: str, path: str, tree: ast.Module, plugin_rules: tuple[Rule, ...]) -> None:
        # plugin_rules: the rules that match by names= or matcher= (the others are this traversal's own)
        super().__init__(source, path)
        self.aliases = AliasMap.from_tree(tree, hot_lines(source, ("import",)))
        self.hot: list[int] | None = None
        if all(r.precheck for r in plugin_rules):
            # Only statements touching a line that can hold a finding are walked: a line with
            # a trigger word, a bare integer device, or a name imported from a CUDA module.
            plugin_names = tuple(n for r in plugin_rules for n in r.names)
            names = [
                name
                for name, q in self.aliases.names.items()
                if _coupled_module(q) or any(q == n or q.startswith(n + ".") for n in plugin_names)
            ]
            extra = [s for r in plugin_rules for s in r.precheck]
            self.hot = hot_lines(source, (*BUILTIN_PRECHECK, *extra, *names), BARE_DEVICE)
        self.plugin_names = [(r, n) for r in plugin_rules for n in r.names]
        self.plugin_matchers = [r for r in plugin_rules if r.matcher is not None]
        self.is_cuda_parents: dict[int, ast.AST] = {}  # filled on demand by acc112, for .is_cuda only
        self.tree = tree
        # Data flow and context, computed on first need (most files never need them).
        self._string_names: frozenset[str] | None = None
        self._device_args: frozenset[str] | None = None
        self.autocast_names: frozenset[str] | None = None  # filled by acc132 on first need
        self._fused: set[int] | None = None
        self.duplicate_flags: dict[int, int] = self._duplicate_flags() if source.count("allow_tf32") > 1 else {}
        self.guarded: list[tuple[int, int]] = []  # line ranges inside an accelerator guard
        self.whole_values: set[int] = set()  # ids of expressions that are a whole statement or assigned value

    # ---- context for plugin matchers
    def qualname(self, node: ast.AST) -> str | None:
        return self.aliases.qualname(node)

    # ---- traversal
    def run(self) -> list[Finding]:
        handlers: dict[type, Callable[[ast.AST], bool]] = {
            ast.Call: self.visit_call,  # type: ignore[dict-item]
            ast.Attribute: self.visit_attribute,  # type: ignore[dict-item]
            ast.Name: self.visit_name,  # type: ignore[dict-item]
            ast.Assign: self.visit_assign,  # type: ignore[dict-item]
            ast.AnnAssign: self.visit_annassign,  # type: ignore[dict-item]
            ast.Subscript: self.visit_subscript,  # type: ignore[dict-item]
            ast.Compare: self.visit_compare,  # type: ignore[dict-item]
            ast.If: self.visit_if,  # type: ignore[dict-item]
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
        return self.findings

    def push(self, *nodes: ast.AST | None) -> None:
        self.stack.extend(n for n in nodes if n is not None)

    def push_call_args(self, call: ast.Call) -> None:
        self.stack.extend(call.args)
        self.stack.extend(kw.value for kw in call.keywords)

    # ---- pre-passes, on first need
    @property
    def string_names(self) -> frozenset[str]:
        """Names assigned a CUDA device string in the statements this scan walks."""
        if self._string_names is None:
            has = re.search(r"""['"]cuda""", self.source) is not None
            self._string_names = device_string_names(self._hot_nodes()) if has else frozenset()
        return self._string_names

    @property
    def device_args(self) -> frozenset[str]:
        """Names passed where a device goes, anywhere in the module."""
        if self._device_args is None:
            self._device_args = device_positions(ast.walk(self.tree))
        return self._device_args

    @property
    def fused(self) -> set[int]:
        """ids of nodes inside a value that chooses a fused kernel."""
        if self._fused is None:
            self._fused = fused_choices(self._hot_nodes()) if "fused" in self.source else set()
        return self._fused

    def _hot_nodes(self) -> Iterator[ast.AST]:
        """Every node :meth:`run` can visit (statements away from hot lines are skipped)."""
        stack: list[ast.AST] = [self.tree]
        hot = self.hot
        while stack:
            node = stack.pop()
            if hot is not None and isinstance(node, ast.stmt) and not touches(node, hot):
                continue
            yield node
            stack.extend(ast.iter_child_nodes(node))

    def _duplicate_flags(self) -> dict[int, int]:
        """Flag assignments that repeat the previous statement's portable call -> that line.

        ``torch.backends.cuda.matmul.allow_tf32 = True`` then
        ``torch.backends.cudnn.allow_tf32 = True`` both mean ``accel.set_allow_tf32(True)``:
        the second is dropped, not written twice.
        """
        dup: dict[int, int] = {}
        for node in ast.walk(self.tree):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if not isinstance(block, list):
                    continue
                previous: tuple[str, str] | None = None
                first_line = 0
                for stmt in block:
                    key = None
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                        row = FLAGS.get(self.aliases.qualname(stmt.targets[0]) or "")
                        if row is not None:
                            key = (row.replacement or "", ast.dump(stmt.value))
                    if key is not None and key == previous:
                        dup[id(stmt)] = first_line
                    elif key is not None:
                        first_line = stmt.lineno
                    previous = key
        return dup

    # ---- device-type tests
    def intentional(self, node: ast.AST, roots: tuple[str, ...] = _INTENTIONAL) -> bool:
        """Whether ``node`` asks an accelerator abstraction (``accel.x()``, ``get_accelerator().y()``)."""
        while True:
            if isinstance(node, ast.Call):
                node = node.func
            q = self.aliases.qualname(node)
            if q is not None:
                return q.startswith(roots)
            if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Call, ast.Attribute)):
                node = node.value
                continue
            return False

    def device_ish(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call) and last_name(node.func) == "str" and len(node.args) == 1:
            node = node.args[0]
        if isinstance(node, ast.Attribute) and node.attr in ("type", "device_type"):
            return True
        if self.intentional(node):
            return True
        name = last_name(node)
        return name is not None and (DEVICE_NAME.search(name) is not None or name in self.string_names)

    def _accelerator_guard(self, test: ast.AST) -> bool:
        """Whether ``test`` decides between an accelerator and the CPU (for ``pin_memory``)."""
        if any(find_device_tests(test, self.segment, self.device_ish, self.intentional)):
            return True
        for sub in ast.walk(test):
            name = last_name(sub)
            if name is not None and (name == "is_cuda" or _ACCEL_WORDS.search(name) or name == "is_available"):
                return True
            if isinstance(sub, ast.Compare) and any(str_value(c) == "cpu" for c in (sub.left, *sub.comparators)):
                return True
        return False

    def _in_guard(self, line: int) -> bool:
        return any(start <= line <= end for start, end in self.guarded)

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
                code, target = row.code, row.replacement or ""
                enabled = "enabled" if row.on_cpu == ENABLED and (code == "ACC131" or has_keyword(node, "enabled")) else ""
                if code == "ACC131" and node.args:
                    if len(node.args) == 1 and not isinstance(node.args[0], ast.Starred) and not any(k.arg == "enabled" for k in node.keywords):
                        # torch.cuda.amp.autocast(flag): its first parameter is enabled
                        self.report(func, code, None, AutocastEnabled(callee=target, guard=enabled), fix_node=node,
                                    suggestion="accel.autocast(enabled=...)")  # fmt: skip
                    else:
                        self.report(func, code, "positional arguments differ from accel.autocast(dtype, enabled)")
                elif row.guarded:
                    guard = "bare" if id(node) in self.whole_values else "value"
                    self.report(func, code, None, RenameCall(callee=target, guard=guard, otherwise=row.cpu_value or "None"), fix_node=node,
                                suggestion=f"{target}(...) if {ACCELERATOR_TEST} else {row.cpu_value}")  # fmt: skip
                elif enabled:
                    self.report(func, code, None, RenameCall(callee=target, guard=enabled), fix_node=node, suggestion=f"{target}(..., enabled=... and {ACCELERATOR_TEST})")
                else:
                    self.report(func, code, None, Replace(text=target), suggestion=target + "(...)")
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
            elif q in CPP_EXTENSION_LOAD:
                self.cpp_extension(node)
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) == 3:
            # getattr(obj, "device", "cuda"): the default is a device string
            if DEVICE_NAME.search(str_value(node.args[1]) or ""):
                self.device_value(node.args[2], string_typed=True)
        if q not in AUTOCAST and q not in CALLS and autocast_like(self, node, q):
            return True
        if isinstance(func, ast.Attribute):
            attr = func.attr
            if attr == "cuda" and q is None:
                self.report(node, "ACC111", None, ToDevice())
                self.push(func.value)
                self.push_call_args(node)
                return False
            if attr == "to":
                if node.args:
                    self.device_value(node.args[0], allow_int=True)
            elif attr == "startswith":
                check_device_test(self, node)
            elif attr == "add_argument":
                options = [str_value(a) or "" for a in node.args]
                for kw in node.keywords:
                    if kw.arg == "default":
                        if any("device" in o for o in options):
                            self.device_value(kw.value, string_typed=True)
                        elif any("backend" in o for o in options):
                            self.backend_value(kw.value)
                cli_option(self, node, options)
            elif attr == "pin_memory" and not node.args and not node.keywords and not self._in_guard(node.lineno):
                self.report(node, "ACC191", "Tensor.pin_memory() fails without CUDA", suggestion="guard with accel.capabilities().pinned_memory")
            elif attr == "format":
                self.runtime_string(node)
        for kw in node.keywords:
            name = kw.arg
            if name is None:
                continue
            if name in ("device", "map_location"):
                self.device_value(kw.value, allow_int=name == "device")
            elif name == "pin_memory_device":
                self.device_value(kw.value, string_typed=True)
            elif name == "pin_memory":
                if isinstance(kw.value, ast.Constant) and kw.value.value is True and not self._in_guard(kw.value.lineno):
                    self.report(kw.value, "ACC191", None, Replace(text="accel.capabilities().pinned_memory"))
            elif name == "backend":
                self.backend_value(kw.value)
            elif name == "device_ids":
                self.device_ids(node, kw.value, q)
            elif name == "fused" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                self.report(kw.value, "ACC207", "fused=True", suggestion="fused optimizer kernels exist per device; keep fused only where the backend has them")
        return True

    def plugin_match(self, rule: Rule, node: ast.AST) -> None:
        assert rule.matcher is not None
        found = rule.matcher(node, self)
        if isinstance(found, Match):
            suggestion = rule.suggestion if found.fix is not None else rule.suggestion or "no portable equivalent"
            self.report(node, rule.code, found.detail or None, found.fix, rule=rule, suggestion=suggestion)
        elif found is not None:
            self.report(node, rule.code, found or None, rule=rule, suggestion=rule.suggestion or "no portable equivalent")

    def reference(self, node: ast.AST, q: str) -> bool:
        """Report a resolved name used outside a call. Return True to descend."""
        if q in _DIST_BACKEND_ENUM:
            self.report(node, "ACC171", "dist.Backend.NCCL", Replace(text="accel.dist_backend()"), suggestion="accel.dist_backend()")
            return False
        row = CALLS.get(q)
        if row is not None:
            if row.guarded or row.on_cpu == ENABLED:
                # bound to a name and called later: the call site decides what it means on the cpu backend
                how = f"{row.replacement}(...) if {ACCELERATOR_TEST} else {row.cpu_value}" if row.guarded else (
                    f"{row.replacement}(..., enabled=... and {ACCELERATOR_TEST})")
                self.report(node, row.code, f"{q} used as a value", suggestion=f"call {how} where it is called")
                return False
            self.report(node, row.code, None, Replace(text=row.replacement or ""), suggestion=row.replacement)
            return False
        if q.startswith(_TABLE_ROOTS):
            row = lookup(q)
            if row is not None and row.kind == "manual":
                self.report(node, row.code, q, suggestion=row.hint)
                return False
        package = package_row(q)
        if package is not None:
            self.report(node, package.code, q, suggestion=package.hint)
            return False
        for rule, name in self.plugin_names:
            if q == name or q.startswith(name + "."):
                self.report(node, rule.code, q, rule=rule, suggestion=rule.suggestion or "no portable equivalent")
                return False
        return True

    def visit_attribute(self, node: ast.Attribute) -> bool:
        for rule in self.plugin_matchers:
            self.plugin_match(rule, node)
        if node.attr == "is_cuda":
            check_is_cuda(self, node)
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
        if self.intentional(node.test, _OWN):
            self.done.update(id(sub) for sub in ast.walk(node.orelse))
        return True

    def visit_expr(self, node: ast.Expr) -> bool:
        self.whole_values.add(id(node.value))
        # A bare string statement is a docstring or a comment in disguise.
        return not isinstance(node.value, (ast.Constant, ast.JoinedStr))

    def _flag_assign(self, target: ast.AST, value: ast.AST | None, stmt: ast.AST, single: bool) -> bool:
        q = self.aliases.qualname(target) if isinstance(target, ast.Attribute) else None
        flag = FLAGS.get(q) if q is not None else None
        if flag is not None and value is not None:
            code, setter = flag.code, flag.replacement or ""
            first = self.duplicate_flags.get(id(stmt))
            if first is not None:
                self.report(target, code, f"same call as line {first}", DropStatement(), fix_node=stmt, suggestion="removed: one call is enough")
            elif single and flag.guarded:
                self.report(target, code, None, AssignCall(setter=setter, guard="bare", otherwise=flag.cpu_value or "None"), fix_node=stmt,
                            suggestion=f"{setter}(...) if {ACCELERATOR_TEST} else None")  # fmt: skip
            elif single:
                self.report(target, code, None, AssignCall(setter=setter), fix_node=stmt, suggestion=f"{setter}(...)")
            else:
                self.report(target, code, "chained assignment")
            return True
        if q is not None and q.startswith(("torch.backends.cudnn.", "torch.backends.cuda.")):
            row = lookup(q)
            self.report(target, "ACC189", q, suggestion=row.hint if row else None)
            return True
        name = last_name(target)
        if name is not None and value is not None:
            if DEVICE_NAME.search(name) or (is_cuda_string(value) and name in self.device_args):
                self.device_value(value, string_typed=True)
            elif _BACKEND_NAME.search(name):
                self.backend_value(value)
            elif "flops" in name.lower():
                check_peak_flops(self, target, name, value)
        return False

    def visit_assign(self, node: ast.Assign) -> bool:
        self.whole_values.add(id(node.value))
        single = len(node.targets) == 1
        for target in node.targets:
            if self._flag_assign(target, node.value, node, single):
                self.push(node.value)
                return False
        return True

    def visit_annassign(self, node: ast.AnnAssign) -> bool:
        if self._flag_assign(node.target, node.value, node, False):
            self.push(node.value)
            return False
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
                        "backend" not in (last_name(_callee(other)) or "").lower() or self.intentional(other)
                    ):
                        self.done.add(id(member))
        if check_device_test(self, node):
            for sub in (node.left, *node.comparators):
                if str_value(sub) is not None:
                    self.done.add(id(sub))
                elif isinstance(sub, (ast.Tuple, ast.List, ast.Set)):
                    self.done.update(id(e) for e in sub.elts)
        return True

    def _intentional_guard(self, test: ast.AST) -> bool:
        """``accel.device_type() == "cuda"``: code that asks on purpose; its branch is left alone."""
        for sub in ast.walk(test):
            if isinstance(sub, ast.Compare) and len(sub.ops) == 1:
                left, right = sub.left, sub.comparators[0]
                for a, b in ((left, right), (right, left)):
                    literal = str_value(a)
                    if literal is None and isinstance(a, (ast.Tuple, ast.List, ast.Set)):
                        literal = next((s for s in map(str_value, a.elts) if s == "cuda"), None)
                    if literal == "cuda" and self.intentional(b, _OWN):
                        return True
        return False

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
            if (node.module + ".").startswith(("torch.utils.cpp_extension.", "torch.utils.collect_env.")):
                for alias in node.names:
                    row = lookup(f"{node.module}.{alias.name}")
                    if row is not None and row.kind == "manual" and f"{node.module}.{alias.name}".startswith(_IMPORT_REPORTED):
                        self.report(node, row.code, f"imports {node.module}.{alias.name}", suggestion=row.hint)
        return False

    def manual_package(self, node: ast.AST, module: str) -> None:
        row = package_row(module)
        if row is not None:
            self.report(node, row.code, f"imports {module}", suggestion=row.hint)

    def visit_function(self, node: ast.FunctionDef) -> bool:
        if DEVICE_NAME.search(node.name):
            # def get_device(): return "cuda"  - the returned string is a device
            for sub in _own_returns(node):
                self.device_value(sub.value, string_typed=True)
        args = node.args
        positional = args.posonlyargs + args.args
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
            self._param_default(arg.arg, default)
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if kw_default is not None:
                self._param_default(arg.arg, kw_default)
        return True

    def _param_default(self, name: str, default: ast.AST) -> None:
        if DEVICE_NAME.search(name):
            self.device_value(default, string_typed=True)
        elif _BACKEND_NAME.search(name):
            self.backend_value(default)

    def visit_dict(self, node: ast.Dict) -> bool:
        for key, value in zip(node.keys, node.values, strict=True):
            name = str_value(key)
            if name is None:
                continue
            if DEVICE_NAME.search(name):
                self.device_value(value, string_typed=True)
            elif _BACKEND_NAME.search(name):
                self.backend_value(value)
            elif name == "fused" and isinstance(value, ast.Constant) and value.value is True:
                self.report(value, "ACC207", "fused=True", suggestion="fused optimizer kernels exist per device; keep fused only where the backend has them")
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
    try:
        findings = Scan(source, path, tree, matching).run()
    except RecursionError:
        return FileResult(path, error=f"{path}: {TOO_DEEP}")
    if chosen is not BUILTIN_RULES:
        reported = {r.code for r in chosen}
        findings = [f for f in findings if f.code in reported]
    quiet = suppressions(source)
    kept: list[Finding] = []
    seen: set[tuple[int, int, str]] = set()
    for finding in sorted(findings, key=lambda f: (f.line, f.col, f.code)):
        key = (finding.line, finding.col, finding.code)
        if key in seen:
            continue
        seen.add(key)
        if enabled is not None and not enabled(finding.code):
            continue
        codes = quiet.get(finding.line, frozenset())
        if codes is None or finding.code in codes:
            continue
        kept.append(finding)
    return FileResult(path, kept)
