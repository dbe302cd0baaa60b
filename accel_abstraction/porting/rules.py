"""The rule table: every kind of CUDA coupling `accel scan` knows, with a stable code.

A :class:`Rule` is plain data (code, category, message, suggested rewrite).  Built-in
rules are detected by :mod:`accel_abstraction.porting.scanner`, which knows how to find
each code; plugin rules bring their own way of matching:

- ``names``: fully qualified names (after import-alias resolution) that are coupling,
  e.g. ``("cupy", "mylib.gpu.sync")``.  A use of the name, or of anything under it
  (``cupy.asarray``), is reported once, at the outermost expression that resolves.
- ``matcher``: a callable ``matcher(node, ctx) -> str | None`` called with every
  :class:`ast.Call` and :class:`ast.Attribute` node; return a message (or ``""`` to use
  the rule's own) to report the node, ``None`` to pass.  ``ctx.qualname(expr)`` resolves
  an expression such as ``tc.synchronize`` to ``"torch.cuda.synchronize"``.

Plugin rules are reported, never rewritten (``portable=False``): ``accel port`` lists
them under "could not port".  A plugin adds rules through the ``accel_scan_rules`` hook::

    from accel_abstraction.porting.rules import Rule

    @hookimpl
    def accel_scan_rules(register):
        register(Rule("XYZ001", "manual", "uses mylib's CUDA kernels", names=("mylib.cuda",)))

The ``precheck`` strings (case-sensitive) of a rule let the scanner skip a file without
parsing it when none of them occurs in its text, and skip statements whose lines
contain none of them (nor a name the rule's ``names`` cover); a plugin rule without
``precheck`` turns both off.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class MatchContext(Protocol):
    """What a plugin matcher may ask about the file being scanned."""

    path: str

    def qualname(self, node: ast.AST) -> str | None:
        """The fully qualified dotted name ``node`` refers to, or ``None``."""
        ...


Matcher = Callable[[ast.AST, MatchContext], "str | None"]

#: Rule categories, one per rule.
CATEGORIES: tuple[str, ...] = (
    "device-string",
    "tensor",
    "cuda-api",
    "amp",
    "rng",
    "memory",
    "sync-streams",
    "distributed",
    "numerics",
    "data",
    "env",
    "manual",
)

_CODE_RE = re.compile(r"^[A-Z]{2,6}[0-9]{3}$")


@dataclass(frozen=True)
class Rule:
    """One kind of coupling.

    Attributes:
        code: stable identifier, e.g. ``"ACC101"`` (letters then three digits).
        category: one of :data:`CATEGORIES`, or a plugin's own word.
        message: what was found, one line.
        suggestion: the portable rewrite, shown in parentheses after the message.
        portable: whether ``accel port`` rewrites it (built-in rules only).
        names: qualified names this rule reports (plugin rules).
        matcher: callable reporting nodes (plugin rules), see the module docstring.
        precheck: substrings one of which a file must contain for this rule to fire.
        examples: ``(source, ported)`` pairs the rule must report; ``ported`` is the line
            ``accel port`` makes of the last line of ``source`` (``None``: reported, not
            rewritten).  The first one is shown in the docs table.
        counterexamples: sources the rule must not report (look-alikes).
    """

    code: str
    category: str
    message: str
    suggestion: str | None = None
    portable: bool = False
    names: tuple[str, ...] = ()
    matcher: Matcher | None = field(default=None, compare=False)
    precheck: tuple[str, ...] = ()
    examples: tuple[tuple[str, str | None], ...] = field(default=(), compare=False)
    counterexamples: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not _CODE_RE.match(self.code):
            raise ValueError(f"rule code {self.code!r} must be 2-6 capital letters then 3 digits, e.g. ACC101")


def _r(code: str, category: str, message: str, suggestion: str | None = None, portable: bool = True) -> Rule:
    return Rule(code, category, message, suggestion, portable)


#: Substrings (case-sensitive) one of which a file must contain for a built-in rule to fire,
#: besides bare integer devices (``.to(0)``, ``device=local_rank``), which the scanner
#: tests with one regular expression.
BUILTIN_PRECHECK: tuple[str, ...] = (
    "cuda", "CUDA", "cudnn", "CUDNN", "nccl", "NCCL", "pin_memory", "GradScaler", "apex", "cupy", "nvtx",
    "nvml", "_scaled_mm",
    '.cu"', ".cu'", ".cuh",
)

BUILTIN_RULES: tuple[Rule, ...] = (
    # device strings
    _r("ACC101", "device-string", 'hard-coded "cuda" device string', "accel.device()"),
    _r("ACC102", "device-string", 'torch.device("cuda", index)', "accel.device(index)"),
    _r("ACC103", "device-string", "CUDA device string built at run time", "accel.device(index)"),
    _r("ACC104", "device-string", "bare integer device means a CUDA device", "accel.device(index)"),
    # tensors and modules
    _r("ACC111", "tensor", ".cuda() moves to a CUDA device", ".to(accel.device())"),
    _r("ACC112", "tensor", ".is_cuda tests for a CUDA device", ".device.type == accel.device_type()"),
    # torch.cuda device API
    _r("ACC121", "cuda-api", "torch.cuda.is_available()", "accel.is_available()"),
    _r("ACC122", "cuda-api", "torch.cuda.device_count()", "accel.device_count()"),
    _r("ACC123", "cuda-api", "torch.cuda current/set device or device name", "accel.current_device() / accel.set_device(i) / accel.device_name()"),
    _r("ACC124", "cuda-api", "torch.cuda.is_bf16_supported()", "accel.is_bf16_supported()"),
    _r(
        "ACC125",
        "cuda-api",
        "CUDA device properties or compute capability",
        "accel.capabilities() says what the device supports",
        portable=False,
    ),
    _r("ACC129", "cuda-api", "torch.cuda API without a portable equivalent", None, portable=False),
    # AMP
    _r("ACC131", "amp", "torch.cuda.amp.autocast", "accel.autocast(dtype=..., enabled=...)"),
    _r("ACC132", "amp", 'autocast with device_type "cuda"', "accel.autocast(dtype=..., enabled=...)"),
    _r("ACC133", "amp", "CUDA GradScaler", "accel.GradScaler(...)"),
    _r("ACC139", "amp", "torch.cuda.amp API without a portable equivalent", "torch.amp with device_type=accel.device_type()", portable=False),
    # RNG
    _r("ACC141", "rng", "torch.cuda RNG call", "accel.manual_seed / manual_seed_all / get_rng_state / set_rng_state"),
    # memory
    _r("ACC151", "memory", "torch.cuda memory statistics", "accel.memory_allocated() and friends"),
    # execution
    _r("ACC161", "sync-streams", "torch.cuda.synchronize()", "accel.synchronize()"),
    _r("ACC162", "sync-streams", "CUDA streams and events", "accel.Stream / accel.Event / accel.current_stream() / accel.stream(s)"),
    # distributed
    _r("ACC171", "distributed", '"nccl" process-group backend', "accel.dist_backend()"),
    # numerics
    _r("ACC181", "numerics", "torch.backends.cudnn.deterministic", "accel.set_deterministic(b)"),
    _r("ACC182", "numerics", "torch.backends.cudnn.benchmark", "accel.set_benchmark(b)"),
    _r("ACC183", "numerics", "TF32 flag", "accel.set_allow_tf32(b)"),
    _r("ACC189", "numerics", "cuDNN/CUDA backend flag without a portable equivalent", None, portable=False),
    # data
    _r("ACC191", "data", "pin_memory=True assumes CUDA", "pin_memory=accel.capabilities().pinned_memory"),
    # environment
    _r("ACC192", "env", "CUDA_VISIBLE_DEVICES", "accel.visible_devices_env()"),
    _r("ACC199", "env", "CUDA environment variable", None, portable=False),
    # inherently CUDA
    _r("ACC201", "manual", "custom CUDA extension", "build per backend; no automatic port", portable=False),
    _r("ACC202", "manual", "NVTX ranges", "torch.profiler.record_function", portable=False),
    _r("ACC203", "manual", "CuPy", "torch operations on accel.device()", portable=False),
    _r("ACC204", "manual", "NVIDIA apex", "torch.amp / torch.optim equivalents", portable=False),
    _r("ACC205", "manual", "CUDA graphs", "guard with accel.capabilities().graphs", portable=False),
    _r("ACC206", "manual", "CUDA toolkit or NVIDIA driver query", "ask accel.backend() / accel.capabilities()", portable=False),
    _r("ACC207", "manual", "CUDA-only kernel or capability", "guard with accel.capabilities()", portable=False),
)

RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in BUILTIN_RULES}
