"""Find CUDA coupling in Python source with :mod:`ast`; never imports or runs the code.

:func:`scan_source` is the whole analysis for one file.  Strings are only examined
where their parent puts them in a *device position* (``device=``, ``.to(...)``,
``torch.device(...)``, an assignment to a ``*device*`` name, ...), so comments,
docstrings, log and help text are never reported.  The body of an ``if`` that already
tests the device type (``if x.device.type == "cuda":``) is left alone.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable

from .aliases import AliasMap
from .findings import FileResult, Finding, Fix
from .mapping import CALLS, FLAGS, PACKAGES, lookup, package_row
from .prefilter import BARE_DEVICE, hot_lines, might_couple, touches
from .rules import BUILTIN_PRECHECK, RULES_BY_CODE, Rule

# --------------------------------------------------------------------------- tables

AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}
GRAD_SCALER = {"torch.amp.GradScaler", "torch.GradScaler", "torch.amp.grad_scaler.GradScaler"}
PROCESS_GROUP = {"torch.distributed.init_process_group", "torch.distributed.new_group"}
ENV_CALLS = {"os.environ.get", "os.getenv", "os.environ.setdefault", "os.environ.pop", "os.putenv", "os.unsetenv"}
CPP_EXTENSION_LOAD = {"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"}

_CUDA_DEVICE = re.compile(r"^cuda(?::(\d+))?$")
_DEVICE_NAME = re.compile(r"(^|_)(device|dev)(_name|_str)?$", re.IGNORECASE)
_BACKEND_NAME = re.compile(r"(^|_)backend$", re.IGNORECASE)
_RANK_NAME = re.compile(
    r"^(local_rank|rank|gpu|gpu_id|gpu_idx|gpu_index|device_id|device_idx|device_index|dev_id|cuda_device)$",
    re.IGNORECASE,
)
_GUARD_ATTRS = {"type", "device_type", "name"}
#: Qualified-name prefixes under which the mapping table may hold a manual row.
_TABLE_ROOTS = ("torch.cuda", "torch.backends.cud", "torch.utils.cpp_extension.", "torch.version.cuda", "torch.profiler.ProfilerActivity.CUDA", "torch.autograd.profiler.emit_nvtx", "torch._scaled_mm")
_SUPPRESS = re.compile(r"#\s*accel:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")

# --------------------------------------------------------------------------- helpers

_COUPLED_PREFIXES = ("torch.cuda", "torch.backends.cud", "torch.utils.cpp_extension", *PACKAGES)


def _coupled_module(qualname: str) -> bool:
    """Whether an imported name can be coupling on a line that does not say ``cuda``."""
    return qualname.startswith(_COUPLED_PREFIXES) or qualname in GRAD_SCALER


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _arg(call: ast.Call, index: int, keyword: str) -> tuple[ast.AST | None, int | str]:
    """The argument at ``index`` or named ``keyword``, and how to address it for ``drop``."""
    if len(call.args) > index and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index], index
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value, keyword
    return None, keyword


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


class _Scan:
    """One pass over one module's tree."""

    def __init__(self, source: str, path: str, tree: ast.Module, plugin_rules: tuple[Rule, ...]) -> None:
        self.path = path
        self.lines = source.splitlines()
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
        self.findings: list[Finding] = []
        self.plugin_names = [(r, n) for r in plugin_rules for n in r.names]
        self.plugin_matchers = [r for r in plugin_rules if r.matcher is not None]
        self.parents: dict[int, ast.AST] = {}  # filled on demand by _parent, for .is_cuda only
        self.tree = tree

    # ---- context for plugin matchers
    def qualname(self, node: ast.AST) -> str | None:
        return self.aliases.qualname(node)

    # ---- positions
    def _col(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        if line.isascii():
            return col
        return len(line.encode("utf-8")[:col].decode("utf-8", errors="replace"))

    def _span(self, node: ast.AST) -> tuple[int, int, int, int]:
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return (
            line,
            self._col(line, node.col_offset),  # type: ignore[attr-defined]
            end_line,
            self._col(end_line, node.end_col_offset or 0),  # type: ignore[attr-defined]
        )

    def report(
        self,
        node: ast.AST,
        code: str,
        detail: str | None = None,
        fix_kind: str | None = None,
        text: str = "",
        drop: int | str | None = None,
        suggestion: str | None = None,
        fix_node: ast.AST | None = None,
        rule: Rule | None = None,
    ) -> None:
        rule = rule or RULES_BY_CODE[code]
        line, col, end_line, end_col = self._span(node)
        fix = None
        if fix_kind is not None:
            target = fix_node or node
            fix = Fix(fix_kind, *self._span(target), text=text, drop=drop)
        if fix is None:
            # Not rewritten: say why, or what a person should write instead.
            reason = suggestion or detail or rule.suggestion or "no portable equivalent"
            if reason is detail:
                detail = None
            suggestion = "manual: " + reason
        else:
            suggestion = suggestion or rule.suggestion
        message = rule.message if detail is None else f"{rule.message}: {detail}"
        self.findings.append(
            Finding(self.path, line, col + 1, end_line, end_col + 1, code, rule.category, message, suggestion, fix)
        )

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

    # ---- device positions
    def device_value(self, node: ast.AST | None, allow_int: bool = False, string_typed: bool = False) -> None:
        """Report ``node`` if it names a CUDA device where a device is expected."""
        if node is None:
            return
        if isinstance(node, ast.IfExp):
            self.device_value(node.body, allow_int, string_typed)
            self.device_value(node.orelse, allow_int, string_typed)
            return
        value = _str(node)
        if value is not None:
            match = _CUDA_DEVICE.match(value)
            if match is None:
                return
            if string_typed:
                if match.group(1) is None:
                    self.report(node, "ACC101", None, "replace", "accel.device_type()", suggestion="accel.device_type()")
                else:
                    self.report(node, "ACC101", "indexed device in a string option")
                return
            text = "accel.device()" if match.group(1) is None else f"accel.device({match.group(1)})"
            self.report(node, "ACC101", None, "replace", text, suggestion=text)
            return
        if isinstance(node, ast.JoinedStr):
            self.device_fstring(node)
            return
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = _str(node.left)
            if left is not None and left.startswith("cuda"):
                right = node.right
                if left == "cuda:" and isinstance(right, ast.Call) and _last_name(right.func) == "str" and len(right.args) == 1:
                    self.report(node, "ACC103", None, "device_from_concat")
                else:
                    self.report(node, "ACC103", "string concatenation")
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            fmt = _str(node.func.value)
            if fmt is not None and fmt.startswith("cuda"):
                if fmt == "cuda:{}" and len(node.args) == 1 and not node.keywords:
                    self.report(node, "ACC103", None, "device_from_format")
                else:
                    self.report(node, "ACC103", "str.format")
            return
        if allow_int:
            if isinstance(node, ast.Constant) and type(node.value) is int:
                text = f"accel.device({node.value})"
                self.report(node, "ACC104", None, "replace", text, suggestion=text)
            elif isinstance(node, (ast.Name, ast.Attribute)) and _RANK_NAME.match(_last_name(node) or ""):
                self.report(node, "ACC104", None, "wrap_device", suggestion=f"accel.device({_last_name(node)})")

    def device_fstring(self, node: ast.JoinedStr) -> None:
        values = node.values
        head = _str(values[0]) if values else None
        if head is None or not head.startswith("cuda"):
            return
        simple = (
            head == "cuda:"
            and len(values) == 2
            and isinstance(values[1], ast.FormattedValue)
            and values[1].conversion == -1
            and values[1].format_spec is None
        )
        if simple:
            self.report(node, "ACC103", None, "device_from_fstring")
        else:
            self.report(node, "ACC103", "f-string")

    # ---- node handlers (return True to visit all children)
    def visit_call(self, node: ast.Call) -> bool:
        func = node.func
        q = self.aliases.qualname(func)
        for rule in self.plugin_matchers:
            self.plugin_match(rule, node)
        if q is not None:
            row = CALLS.get(q)
            if row is not None:
                code, target = row.code, row.replacement or ""
                if code == "ACC131" and node.args:
                    self.report(func, code, "positional arguments differ from accel.autocast(dtype, enabled)")
                else:
                    self.report(func, code, None, "replace", target, suggestion=target + "(...)")
                self.push_call_args(node)
                return False
            if q == "torch.device":
                self.torch_device(node)
                return False
            if q in AUTOCAST:
                dev, where = _arg(node, 0, "device_type")
                if _str(dev) == "cuda":
                    self.report(node, "ACC132", None, "rename_call", "accel.autocast", drop=where)
                self.push_call_args(node)
                return False
            if q in GRAD_SCALER:
                dev, where = _arg(node, 0, "device")
                if dev is None or _str(dev) == "cuda":
                    self.report(node, "ACC133", None, "rename_call", "accel.GradScaler", drop=where if dev is not None else None)
                self.push_call_args(node)
                return False
            if q in PROCESS_GROUP:
                backend, _ = _arg(node, 0, "backend")
                self.backend_value(backend)
                self.push_call_args(node)
                return False
            if q in ENV_CALLS and node.args:
                self.env_name(node.args[0])
            elif q in CPP_EXTENSION_LOAD:
                self.cpp_extension(node)
        elif isinstance(func, ast.Attribute):
            attr = func.attr
            if attr == "cuda":
                self.report(node, "ACC111", None, "to_device")
                self.push(func.value)
                self.push_call_args(node)
                return False
            if attr == "to":
                if node.args:
                    self.device_value(node.args[0], allow_int=True)
            elif attr == "add_argument":
                if any("device" in (_str(a) or "") for a in node.args):
                    for kw in node.keywords:
                        if kw.arg == "default":
                            self.device_value(kw.value, string_typed=True)
            elif attr == "pin_memory" and not node.args and not node.keywords:
                self.report(node, "ACC191", "Tensor.pin_memory() fails without CUDA", suggestion="guard with accel.capabilities().pinned_memory")
        for kw in node.keywords:
            name = kw.arg
            if name is None:
                continue
            if name in ("device", "map_location"):
                self.device_value(kw.value, allow_int=name == "device")
            elif name == "pin_memory":
                if isinstance(kw.value, ast.Constant) and kw.value.value is True:
                    self.report(kw.value, "ACC191", None, "replace", "accel.capabilities().pinned_memory")
            elif name == "backend":
                self.backend_value(kw.value)
            elif name == "device_ids":
                self.device_ids(kw.value)
        return True

    def torch_device(self, node: ast.Call) -> None:
        self.push_call_args(node)
        dev, where = _arg(node, 0, "type")
        value = _str(dev)
        if value is None:
            before = len(self.findings)
            self.device_value(dev)
            if len(node.args) == 1 and not node.keywords:
                # torch.device(f"cuda:{i}") becomes accel.device(i), not torch.device(accel.device(i))
                for i in range(before, len(self.findings)):
                    found = self.findings[i]
                    if found.fix is not None and found.fix.kind.startswith("device_from_"):
                        wrapped = Fix(found.fix.kind, *self._span(node))
                        self.findings[i] = dataclasses.replace(found, fix=wrapped)
            return
        match = _CUDA_DEVICE.match(value)
        if match is None:
            return
        index, _ = _arg(node, 1, "index")
        if index is not None and value == "cuda":
            self.report(node, "ACC102", None, "rename_call", "accel.device", drop=where)
        elif index is None:
            text = "accel.device()" if match.group(1) is None else f"accel.device({match.group(1)})"
            self.report(node, "ACC101", None, "replace", text, suggestion=text)
        else:
            self.report(node, "ACC102", "index given twice")

    def backend_value(self, node: ast.AST | None) -> None:
        if isinstance(node, ast.IfExp):
            self.backend_value(node.body)
            self.backend_value(node.orelse)
            return
        value = _str(node)
        if node is None or value is None or "nccl" not in value:
            return
        if value == "nccl":
            self.report(node, "ACC171", None, "replace", "accel.dist_backend()")
        else:
            self.report(node, "ACC171", "backend string names nccl alongside others")

    def device_ids(self, node: ast.AST) -> None:
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if (isinstance(first, ast.Constant) and type(first.value) is int) or _RANK_NAME.match(_last_name(first) or ""):
                self.report(node, "ACC104", "DDP device_ids assume a CUDA device; pass them only where accel.device_type() needs them")

    def env_name(self, node: ast.AST) -> None:
        name = _str(node)
        if name is None:
            return
        if name == "CUDA_VISIBLE_DEVICES":
            self.report(node, "ACC192", None, "replace", "accel.visible_devices_env()")
        elif name.startswith(("CUDA_", "NCCL_", "CUDNN_")) or "_CUDA_" in name:
            self.report(node, "ACC199", name, suggestion="only CUDA reads it; set the selected backend's own variable")

    def cpp_extension(self, node: ast.Call) -> None:
        for kw in node.keywords:
            if kw.arg in ("cuda_sources", "with_cuda", "extra_cuda_cflags"):
                self.report(node, "ACC201", f"{kw.arg}=", suggestion="CUDA kernels must be built per backend")
                return
        for sub in ast.walk(node):
            value = _str(sub)
            if value is not None and value.endswith((".cu", ".cuh")):
                self.report(node, "ACC201", f"CUDA source {value}", suggestion="CUDA kernels must be built per backend")
                return

    def plugin_match(self, rule: Rule, node: ast.AST) -> None:
        assert rule.matcher is not None
        message = rule.matcher(node, self)
        if message is not None:
            self.report(node, rule.code, message or None, rule=rule, suggestion=rule.suggestion or "no portable equivalent")

    def reference(self, node: ast.AST, q: str) -> bool:
        """Report a resolved name used outside a call. Return True to descend."""
        row = CALLS.get(q)
        if row is not None:
            self.report(node, row.code, None, "replace", row.replacement or "", suggestion=row.replacement)
            return False
        if q.startswith(_TABLE_ROOTS):
            row = lookup(q)
            if row is not None and row.kind == "manual":
                self.report(node, row.code, q, suggestion=row.hint)
                return False
        for rule, name in self.plugin_names:
            if q == name or q.startswith(name + "."):
                self.report(node, rule.code, q, rule=rule, suggestion=rule.suggestion or "no portable equivalent")
                return False
        return True

    def visit_attribute(self, node: ast.Attribute) -> bool:
        for rule in self.plugin_matchers:
            self.plugin_match(rule, node)
        if node.attr == "is_cuda" and isinstance(node.ctx, ast.Load):
            self.report(node, "ACC112", None, "is_cuda", "paren" if self._needs_paren(node) else "")
            return True
        q = self.aliases.qualname(node)
        if q is None:
            return True
        return self.reference(node, q)

    def _parent(self, node: ast.AST) -> ast.AST | None:
        """The parent of ``node``, found by walking only the top-level statement holding it."""
        if id(node) not in self.parents:
            line = node.lineno  # type: ignore[attr-defined]
            for stmt in self.tree.body:
                if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                    for parent in ast.walk(stmt):
                        for child in ast.iter_child_nodes(parent):
                            if isinstance(child, ast.Attribute) and child.attr == "is_cuda":
                                self.parents[id(child)] = parent
                    break
        return self.parents.get(id(node))

    def _needs_paren(self, node: ast.AST) -> bool:
        parent = self._parent(node)
        if parent is None:
            return True
        return not isinstance(parent, (ast.BoolOp, ast.If, ast.While, ast.Assign, ast.Return, ast.IfExp, ast.keyword, ast.Call, ast.Assert))

    def visit_name(self, node: ast.Name) -> bool:
        if not isinstance(node.ctx, ast.Load):
            return False
        q = self.aliases.names.get(node.id)
        if q is None or q == node.id:
            return False
        self.reference(node, q)
        return False

    def _flag_assign(self, target: ast.AST, value: ast.AST | None, stmt: ast.AST, single: bool) -> bool:
        q = self.aliases.qualname(target) if isinstance(target, ast.Attribute) else None
        flag = FLAGS.get(q) if q is not None else None
        if flag is not None and value is not None:
            code, setter = flag.code, flag.replacement or ""
            if single:
                self.report(target, code, None, "assign_call", setter, fix_node=stmt, suggestion=f"{setter}(...)")
            else:
                self.report(target, code, "chained assignment")
            return True
        if q is not None and q.startswith(("torch.backends.cudnn.", "torch.backends.cuda.")):
            row = lookup(q)
            self.report(target, "ACC189", q, suggestion=row.hint if row else None)
            return True
        name = _last_name(target)
        if name is not None and value is not None:
            if _DEVICE_NAME.search(name):
                self.device_value(value)
            elif _BACKEND_NAME.search(name):
                self.backend_value(value)
        return False

    def visit_assign(self, node: ast.Assign) -> bool:
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
                self.env_name(node.left)
        return True

    def _is_device_type(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            node = node.func
        if isinstance(node, ast.Attribute) and node.attr in _GUARD_ATTRS:
            return True
        q = self.aliases.qualname(node)
        return q is not None and q.startswith(("accel_abstraction", "torch.accelerator"))

    def _guard(self, test: ast.AST) -> str | None:
        """Which branch ``test`` reserves for CUDA: ``"body"`` for ``x.device.type == "cuda"``,
        ``"orelse"`` for ``!=`` / ``not in``, ``None`` when it is no device-type test."""
        for sub in ast.walk(test):
            if not (isinstance(sub, ast.Compare) and len(sub.ops) == 1):
                continue
            op = sub.ops[0]
            if isinstance(op, (ast.Eq, ast.In)):
                branch = "body"
            elif isinstance(op, (ast.NotEq, ast.NotIn)):
                branch = "orelse"
            else:
                continue
            left, right = sub.left, sub.comparators[0]
            for a, b in ((left, right), (right, left)):
                literal = _str(a)
                if literal is None and isinstance(a, (ast.Tuple, ast.List, ast.Set)):
                    literal = next((s for s in map(_str, a.elts) if s == "cuda"), None)
                if literal == "cuda" and self._is_device_type(b):
                    return branch
        return None

    def visit_if(self, node: ast.If) -> bool:
        guarded = self._guard(node.test)
        if guarded == "body":
            self.push(node.test, *node.orelse)
            return False
        if guarded == "orelse":
            self.push(node.test, *node.body)
            return False
        return True

    def visit_import(self, node: ast.Import) -> bool:
        for alias in node.names:
            self.manual_package(node, alias.name)
        return False

    def visit_import_from(self, node: ast.ImportFrom) -> bool:
        if node.module and not node.level:
            self.manual_package(node, node.module)
        return False

    def manual_package(self, node: ast.AST, module: str) -> None:
        row = package_row(module)
        if row is not None:
            self.report(node, row.code, f"imports {module}", suggestion=row.hint)

    def visit_function(self, node: ast.FunctionDef) -> bool:
        args = node.args
        positional = args.posonlyargs + args.args
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
            self._param_default(arg.arg, default)
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if kw_default is not None:
                self._param_default(arg.arg, kw_default)
        return True

    def _param_default(self, name: str, default: ast.AST) -> None:
        if _DEVICE_NAME.search(name):
            self.device_value(default)
        elif _BACKEND_NAME.search(name):
            self.backend_value(default)

    def visit_dict(self, node: ast.Dict) -> bool:
        for key, value in zip(node.keys, node.values, strict=True):
            name = _str(key)
            if name is None:
                continue
            if _DEVICE_NAME.search(name):
                self.device_value(value)
            elif _BACKEND_NAME.search(name):
                self.backend_value(value)
        return True


# --------------------------------------------------------------------------- entry points


def scan_source(
    source: str,
    path: str = "<string>",
    plugin_rules: tuple[Rule, ...] = (),
    enabled: Callable[[str], bool] | None = None,
    precheck: bool = True,
) -> FileResult:
    """Scan one module's text.

    Args:
        source: the Python source.
        path: reported as the finding's file.
        plugin_rules: extra rules (see :mod:`accel_abstraction.porting.rules`).
        enabled: ``enabled(code)`` filters reported codes (selection); all when ``None``.
        precheck: skip parsing when a cheap text test shows no rule can fire.
    """
    if precheck and not any(not r.precheck for r in plugin_rules):
        extra = [s for r in plugin_rules for s in r.precheck]
        if not might_couple(source, extra):
            return FileResult(path, skipped=True)
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"{path}:{line}" if line else path
        return FileResult(path, error=f"{where}: cannot parse: {getattr(exc, 'msg', exc)}")
    scan = _Scan(source, path, tree, plugin_rules)
    findings = scan.run()
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
