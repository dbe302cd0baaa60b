"""The scanner's checks driven by the CUDA API table (:mod:`.mapping`, the rules' ``apis`` rows).

A call of a ``call`` row's API is renamed to its replacement (guarded as its ``on_cpu``
says); a reference to one outside a call, an assignment to a ``flag`` row, a name under a
``manual`` row and an import of a ``package`` row are reported with the row's rule code
and hint; so are the names a plugin rule lists (``names=``). The rules' ``"reference"`` and
``"flag"`` checks (``Rule.visits``) see a name, or an assigned attribute, before the table does.
"""

from __future__ import annotations

import ast

from .apis import ACCELERATOR_TEST, ENABLED, ApiMapping
from .context import ScanContext
from .fixes import AssignCall, DropImport, DropStatement, RenameCall, Replace
from .guards import has_keyword
from .mapping import CALLS, FLAGS, lookup, package_row
from .rules import VISITS
from .rules import acc131_cuda_amp_autocast as acc131
from .rules.acc131_cuda_amp_autocast import autocast_positional

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
    "torch.get_autocast_gpu_dtype",
    "torch.set_autocast_gpu_dtype",
)
#: Modules whose imported names are reported on the import line too (a build or an environment report needs a person).
_IMPORT_REPORTED = ("torch.utils.cpp_extension.CUDA_HOME", "torch.utils.collect_env.")
#: Modules whose renamed imports (``from torch.cuda import device_count as n``) are reported at the import.
_ALIASED = ("torch.cuda.", "torch.backends.cudnn", "torch.backends.cuda")
_REFERENCE_CHECKS = VISITS.get("reference", ())
_FLAG_CHECKS = VISITS.get("flag", ())
_AUTOCAST_CODE = acc131.RULE.code


class ApiChecks(ScanContext):
    """Mixin of the scanner: the checks the API table drives."""

    def api_call(self, node: ast.Call, row: ApiMapping) -> None:
        """A call of a ``call`` row's API: renamed to its replacement, guarded as ``on_cpu`` says."""
        func = node.func
        code, target = row.code, row.replacement or ""
        enabled = "enabled" if row.on_cpu == ENABLED and (code == _AUTOCAST_CODE or has_keyword(node, "enabled")) else ""
        if code == _AUTOCAST_CODE and node.args:
            autocast_positional(self, node, target, enabled)
        elif row.guarded:
            guard = "bare" if id(node) in self.whole_values else "value"
            self.report(func, code, None, RenameCall(callee=target, guard=guard, otherwise=row.cpu_value or "None"), fix_node=node,
                        suggestion=f"{target}(...) if {ACCELERATOR_TEST} else {row.cpu_value}")  # fmt: skip
        elif enabled:
            self.report(func, code, None, RenameCall(callee=target, guard=enabled), fix_node=node, suggestion=f"{target}(..., enabled=... and {ACCELERATOR_TEST})")
        else:
            self.report(func, code, None, Replace(text=target), suggestion=target + "(...)")

    def reference(self, node: ast.AST, q: str) -> bool:
        """Report a resolved name used outside a call. Return True to descend."""
        for check in _REFERENCE_CHECKS:
            if check(self, node, q):
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

    def flag_assign(self, target: ast.AST, value: ast.AST | None, stmt: ast.AST, single: bool) -> bool:
        """An assignment to a ``flag`` row's API (or another cuDNN/CUDA backend flag); return whether it was one."""
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
        return q is not None and any(check(self, target, q) for check in _FLAG_CHECKS)

    def manual_package(self, node: ast.AST, module: str) -> None:
        row = package_row(module)
        if row is not None:
            self.report(node, row.code, f"imports {module}", suggestion=row.hint)

    def imported_names(self, node: ast.ImportFrom) -> None:
        """Names imported under another name from ``torch.cuda`` / ``torch.backends.cudnn`` (:meth:`aliased_import`),
        and names imported from a module whose imports need a person (a build, an environment report)."""
        assert node.module is not None
        for alias in node.names:
            if alias.asname and alias.asname != alias.name:
                self.aliased_import(alias, f"{node.module}.{alias.name}")
        if (node.module + ".").startswith(("torch.utils.cpp_extension.", "torch.utils.collect_env.")):
            for alias in node.names:
                row = lookup(f"{node.module}.{alias.name}")
                if row is not None and row.kind == "manual" and f"{node.module}.{alias.name}".startswith(_IMPORT_REPORTED):
                    self.report(node, row.code, f"imports {node.module}.{alias.name}", suggestion=row.hint)

    def aliased_import(self, alias: ast.alias, q: str) -> None:
        """``from torch.cuda import device_count as cuda_device_count``: reported at the import with
        the row's code; the port drops the import once no use of the alias is left (an unused one at once)."""
        if not (q + ".").startswith(_ALIASED):
            return
        row = lookup(q)
        if row is None:
            return
        self.report(alias, row.code, f"{q} imported as {alias.asname}", DropImport(name=alias.asname or alias.name),
                    suggestion="the import goes once no use of the name is left")  # fmt: skip
