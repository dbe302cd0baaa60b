"""The per-file state of a scan: what every check of the scanner's traversal may ask.

:class:`ScanContext` holds the import aliases, the lines worth walking (the text pre-check of
:mod:`.prefilter`), the names assigned device strings or passed where a device goes, the
blocks an accelerator test guards, and the ``# accel: ignore`` / ``# noqa`` comments; the traversal and
its node handlers are :class:`.scanner.Scan`, a subclass.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from .aliases import AliasMap
from .devices import DeviceChecks
from .findings import Finding
from .guards import DEVICE_NAME, device_positions, device_string_names, env_key_names, last_name, str_value
from .mapping import FLAGS, PACKAGES
from .prefilter import BARE_DEVICE, BUILTIN_PRECHECK, hot_lines, touches
from .rules import Rule
from .rules.acc104_integer_device import ordinal_names
from .rules.acc113_device_type_test import find_device_tests
from .rules.acc133_grad_scaler import GRAD_SCALER
from .rules.acc207_cuda_only_kernel import fused_choices

#: Accelerator abstractions whose answers code asks on purpose (``accel.device_type() == "cuda"``,
#: DeepSpeed's ``get_accelerator().communication_backend_name() == "nccl"``).
INTENTIONAL = ("accel_abstraction", "torch.accelerator", "deepspeed.accelerator")
#: Abstractions whose "is it cuda" branch is left unreported: it runs only where the selected backend is cuda.
OWN = ("accel_abstraction", "torch.accelerator")
_ACCEL_WORDS = re.compile(r"cuda|gpu|accel", re.IGNORECASE)
_SUPPRESS = re.compile(r"#\s*accel:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")
#: The ``noqa`` comment as ruff and flake8 read it: bare, every code; followed by ``: ACC111, ACC121``,
#: those codes. A colon followed by no code suppresses nothing (ruff warns about it; it is not a bare one).
_NOQA = re.compile(r"#\s*noqa(?P<colon>\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*)?)?", re.IGNORECASE)
_MARKERS = re.compile(r"accel:|noqa", re.IGNORECASE)
_COUPLED_PREFIXES = ("torch.cuda", "torch.backends.cud", "torch.utils.cpp_extension", "torch.utils.collect_env", *PACKAGES)


def _coupled_module(qualname: str) -> bool:
    """Whether an imported name can be coupling on a line that does not say ``cuda``."""
    return qualname.startswith(_COUPLED_PREFIXES) or qualname in GRAD_SCALER


def _suppressed_on(text: str) -> frozenset[str] | None:
    """What one line's comments suppress: ``None`` every code, else those codes (empty: none)."""
    ours: frozenset[str] = frozenset()
    match = _SUPPRESS.search(text)
    if match is not None:
        if match.group(1) is None:
            return None
        ours = frozenset(c.strip() for c in match.group(1).split(",") if c.strip())
    noqa = _NOQA.search(text)
    if noqa is not None:
        if noqa.group("colon") is None:
            return None
        ours |= frozenset(c.upper() for c in re.split(r"[,\s]+", noqa.group("codes") or "") if c)
    return ours


def suppressions(source: str) -> dict[int, frozenset[str] | None]:
    """Line -> suppressed codes (``None``: every code) from ``# accel: ignore[...]`` and ``# noqa[: ...]`` comments.

    ``# accel: ignore`` and a bare ``# noqa`` suppress every code on their line, as in ruff and
    flake8; ``# accel: ignore[ACC111,ACC121]`` and ``# noqa: ACC111, ACC121`` only those codes
    (other tools' codes in the same ``noqa`` are left to them).
    """
    found: dict[int, frozenset[str] | None] = {}
    if _MARKERS.search(source) is None:
        return found
    for lineno, text in enumerate(source.splitlines(), start=1):
        if _MARKERS.search(text) is None:
            continue
        codes = _suppressed_on(text)
        if codes is None or codes:
            found[lineno] = codes
    return found


def reported(findings: list[Finding], source: str, enabled: Callable[[str], bool] | None) -> list[Finding]:
    """``findings`` in source order, without repeats, codes ``enabled`` leaves out and suppressed ones (:func:`suppressions`)."""
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
    return kept


class ScanContext(DeviceChecks):
    """The per-file state a scan reads: import aliases, the lines worth walking, and the
    data-flow pre-passes (computed on first need), plus the findings (:class:`.reporting.Reporter`)."""

    def __init__(self, source: str, path: str, tree: ast.Module, plugin_rules: tuple[Rule, ...]) -> None:
        # plugin_rules: the rules that match by names= or matcher= (the others are this traversal's own)
        super().__init__(source, path)
        self.aliases = AliasMap.from_tree(tree, hot_lines(source, ("import",)))
        # names holding a CUDA ordinal (device = rank % torch.cuda.device_count()): their uses are hot too
        self.ordinal_names = ordinal_names(tree, self.aliases.qualname) if "device_count" in source or "current_device" in source else frozenset()
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
            uses = [f"{form}{n}" for n in self.ordinal_names for form in (".to(", "device=", "device_ids=[")]
            self.hot = hot_lines(source, (*BUILTIN_PRECHECK, *extra, *names, *uses), BARE_DEVICE)
        self.plugin_names = [(r, n) for r in plugin_rules for n in r.names]
        self.plugin_matchers = [r for r in plugin_rules if r.matcher is not None]
        self.tree = tree
        # Data flow and context, computed on first need (most files never need them).
        self._string_names: frozenset[str] | None = None
        self._device_args: frozenset[str] | None = None
        self._env_keys: frozenset[str] | None = None
        self.autocast_names: frozenset[str] | None = None  # filled by acc132 on first need
        self._fused: set[int] | None = None
        self.duplicate_flags: dict[int, int] = self._duplicate_flags() if source.count("allow_tf32") > 1 else {}
        self.guarded: list[tuple[int, int]] = []  # line ranges inside an accelerator guard
        self.whole_values: set[int] = set()  # ids of expressions that are a whole statement or assigned value

    # ---- context for plugin matchers
    def qualname(self, node: ast.AST) -> str | None:
        return self.aliases.qualname(node)

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
    def env_key_names(self) -> frozenset[str]:
        """Names used as an environment variable's name (``os.environ[key] = v``, ``os.putenv(key, v)``)."""
        if self._env_keys is None:
            self._env_keys = env_key_names(self.tree, self.aliases.qualname) if "environ" in self.source or "env" in self.source else frozenset()
        return self._env_keys

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
    def intentional(self, node: ast.AST, roots: tuple[str, ...] = INTENTIONAL) -> bool:
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

    def _intentional_guard(self, test: ast.AST) -> bool:
        """``accel.device_type() == "cuda"``: code that asks on purpose; its branch is left alone."""
        for sub in ast.walk(test):
            if isinstance(sub, ast.Compare) and len(sub.ops) == 1:
                left, right = sub.left, sub.comparators[0]
                for a, b in ((left, right), (right, left)):
                    literal = str_value(a)
                    if literal is None and isinstance(a, (ast.Tuple, ast.List, ast.Set)):
                        literal = next((s for s in map(str_value, a.elts) if s == "cuda"), None)
                    if literal == "cuda" and self.intentional(b, OWN):
                        return True
        return False
