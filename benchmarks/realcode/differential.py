"""Does a port change what real code does on a CPU?  Run the original and the ported file with the cpu backend.

For each realcode file, one fresh interpreter per version (original, ported), with
``ACCEL_BACKEND=cpu``, ``sys.argv`` of the file alone (argparse defaults) and a scratch
working directory:

1. the file is executed as a module (``__name__`` is not ``"__main__"``, so a ``main()``
   guard does not start training); imports of packages that are not installed here
   (detectron2, mpi4py, transformers, the project's own relative modules, ...) get a stub
   module, the same for both versions;
2. every function the file defines at top level whose parameters all have defaults is
   called, each under a time limit;
3. what a program can observe is recorded: each call's result (plain values, tensors by
   dtype, shape and values; other objects by type name) or its exception type, and what
   it printed (digits and addresses masked: timings and memory sizes vary between runs).

The two records are compared; a file whose records differ is a "behaviour changed on
cpu", except for calls that raised in the original (no CUDA here) and run in the port:
no program that ran on a CPU relied on those, and they are counted apart ("now runs").  Functions that need arguments are not called (listed as such), so this checks
what can be called on a CPU without inputs, not everything a file can do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: Seconds one function call may take inside the child (training loops, spawns, DNS lookups stop here).
CALL_LIMIT_S = 20
#: Seconds one child may take in all.
FILE_LIMIT_S = 300

# The child: stubs for what is missing, the module executed, its functions called, a JSON record printed last.
CHILD = r'''
import builtins, contextlib, importlib.abc, importlib.machinery, importlib.util, inspect, io, json, re, signal, sys, types

path, name, limit, with_stubs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
sys.argv = [path]


class _StubMeta(type):
    def __getattr__(cls, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _stub_class(attr)

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return False


class Stub(metaclass=_StubMeta):
    """Whatever a missing package would have given: callable, attribute-rich, empty, falsy."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _stub_class(attr)()

    def __call__(self, *args, **kwargs):
        return Stub()

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __index__(self):
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __getitem__(self, key):
        return Stub()

    def __repr__(self):
        return "<stub>"


def _stub_class(name):
    return _StubMeta(str(name), (Stub,), {})


class _StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _stub_class(attr)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: a module nothing else can import becomes a stub."""

    stubbed = []

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in sys.stdlib_module_names or top.startswith("_"):
            return None  # optional platform modules stay missing, as they are for the real program
        if top in sys.modules and not isinstance(sys.modules[top], _StubModule) and top != "realcode_pkg":
            return None  # a missing submodule of an installed package: ImportError, as for the real program
        self.stubbed.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.append(_Finder())


def _observe(value, depth=0):
    import torch

    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if isinstance(value, torch.Tensor):
        return ["tensor", str(value.dtype), list(value.shape), value.detach().cpu().double().flatten()[:16].tolist()]
    if isinstance(value, torch.device):
        return ["device", str(value)]
    if isinstance(value, (list, tuple)) and depth < 3:
        return [_observe(v, depth + 1) for v in value]
    if isinstance(value, dict) and depth < 3:
        return {str(k): _observe(v, depth + 1) for k, v in value.items()}
    return ["object", type(value).__name__]


def _mask(text):
    return re.sub(r"0x[0-9a-f]+|\d+", "#", text)


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


# What both versions load anyway, loaded before any time limit runs (a loaded machine takes seconds):
# torch, and accel-abstraction with its backend selected (symmetric: the original gets it too).
import torch  # noqa: E402
import accel_abstraction  # noqa: E402

accel_abstraction.backend()
signal.signal(signal.SIGALRM, _alarm)
record = {"module": None, "calls": {}, "stdout": [], "skipped": []}


def _run(key, fn):
    out = io.StringIO()
    signal.alarm(limit)
    try:
        with contextlib.redirect_stdout(out):
            value = fn()
        outcome = ["ok", _observe(value)]
    except _Timeout:
        outcome = ["timeout"]
    except SystemExit as exc:
        outcome = ["exit", str(exc.code)]
    except BaseException as exc:
        outcome = ["raises", type(exc).__name__]
    finally:
        signal.alarm(0)
    record["stdout"] += [f"{key}: {_mask(line)}" for line in out.getvalue().splitlines()]
    return outcome


package = types.ModuleType("realcode_pkg")
package.__path__ = []
sys.modules["realcode_pkg"] = package
spec = importlib.util.spec_from_file_location("realcode_pkg." + name, path)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
import random  # noqa: E402

random.seed(0)
torch.manual_seed(0)
try:
    import numpy

    numpy.random.seed(0)
except ImportError:
    pass
record["module"] = _run("<module>", lambda: spec.loader.exec_module(module))
for attr, fn in sorted(vars(module).items()):
    if not inspect.isfunction(fn) or fn.__module__ != module.__name__:
        continue
    params = inspect.signature(fn).parameters.values()
    required = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if required and not with_stubs:
        record["skipped"].append(attr)
        continue
    # with_stubs: required parameters get a stub (empty, falsy), the same in both versions
    args = {p.name: Stub() for p in required if p.kind is not p.POSITIONAL_ONLY}
    pos = [Stub() for p in required if p.kind is p.POSITIONAL_ONLY]
    torch.manual_seed(0)
    record["calls"][attr] = _run(attr, lambda fn=fn, pos=pos, args=args: fn(*pos, **args))
print("\n@@RECORD@@" + json.dumps(record, default=str))
'''


@dataclass
class Outcome:
    """What one version of a file did on the cpu backend."""

    record: dict[str, object] | None
    error: str = ""

    def comparable(self) -> object:
        if self.record is None:
            return ("no record", self.error)
        return {k: v for k, v in self.record.items() if k != "skipped"}


def run_version(text: str, name: str, python: str = sys.executable, with_stubs: bool = False) -> Outcome:
    """Execute one version of a file in a fresh interpreter with the cpu backend; its record."""
    with tempfile.TemporaryDirectory(prefix="realcode-cpu-") as scratch:
        src = Path(scratch) / f"{name}.py"
        src.write_text(text, encoding="utf-8")
        env = {
            **os.environ,
            "ACCEL_BACKEND": "cpu",
            "PYTHONPATH": str(ROOT),
            "CUDA_VISIBLE_DEVICES": "",
            "MASTER_ADDR": "127.0.0.1",
            "PYTHONHASHSEED": "0",
        }
        env.pop("WORLD_SIZE", None)
        env.pop("RANK", None)
        try:
            proc = subprocess.run(
                [python, "-c", CHILD, str(src), name, str(CALL_LIMIT_S), "1" if with_stubs else "0"],
                cwd=scratch,
                env=env,
                capture_output=True,
                text=True,
                timeout=FILE_LIMIT_S,
            )
        except subprocess.TimeoutExpired:
            return Outcome(None, f"took over {FILE_LIMIT_S} s")
    marker = proc.stdout.rfind("@@RECORD@@")
    if marker < 0:
        return Outcome(None, f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
    return Outcome(json.loads(proc.stdout[marker + len("@@RECORD@@") :]))


@dataclass
class Difference:
    """One file: did the port change what it does on the cpu backend, and where."""

    key: str
    changed: bool
    called: int
    skipped: int
    detail: str = ""
    #: calls that raised in the original without CUDA and run in the port (no CPU program relied on them)
    now_run: tuple[str, ...] = ()
    #: each change by kind: "returned before, raises now", "value changed", "message now wrong"
    kinds: tuple[str, ...] = ()


RAISES_NOW = "returned before, raises now"
VALUE_CHANGED = "value changed"
MESSAGE_WRONG = "message now wrong"


def change_kind(before: object, after: object) -> str:
    """The kind of a changed call outcome (``["raises", "TypeError"]``, ``["returns", ...]``)."""
    raised = isinstance(before, list) and before[:1] in (["raises"], ["exit"])
    raises = isinstance(after, list) and after[:1] in (["raises"], ["exit"])
    if raises and not raised:
        return RAISES_NOW
    if raises and raised:
        return MESSAGE_WRONG
    return VALUE_CHANGED


def compare(key: str, original: str, ported: str, with_stubs: bool = False) -> Difference:
    """Run both versions of a file with the cpu backend and compare what they did.

    ``with_stubs``: also call the functions that need arguments, each required one a stub.
    """
    name = "subject"
    before = run_version(original, name, with_stubs=with_stubs)
    after = run_version(ported, name, with_stubs=with_stubs)
    if before.record is None or after.record is None:
        same = before.comparable() == after.comparable()
        return Difference(key, not same, 0, 0, "" if same else f"original: {before.error or 'ran'}; ported: {after.error or 'ran'}")
    a, b = before.comparable(), after.comparable()
    calls = len(before.record["calls"])  # type: ignore[arg-type]
    skipped = len(before.record["skipped"])  # type: ignore[arg-type]
    if a == b:
        return Difference(key, False, calls, skipped)
    assert isinstance(a, dict) and isinstance(b, dict)
    # What the original itself does differently from run to run (a free port, the time) is no change by the port.
    again = run_version(original, name, with_stubs=with_stubs).comparable()
    if isinstance(again, dict):
        _drop_unstable(a, b, again)
        if a == b:
            return Difference(key, False, calls, skipped, "only run-to-run differences of the original")
    # A call that raised in the original (no CUDA here) was never part of what the program did on a CPU:
    # that the port runs it is reported apart, as the mapping table's "raises" rows are.
    now_run = tuple(
        fn for fn in a["calls"] if a["calls"][fn] != b["calls"].get(fn) and a["calls"][fn][0] in ("raises", "exit")  # type: ignore[index]
    )
    for fn in now_run:
        a["calls"][fn] = b["calls"][fn] = "original raised"  # type: ignore[index]
        a["stdout"] = [line for line in a["stdout"] if not line.startswith(f"{fn}: ")]  # type: ignore[index,union-attr]
        b["stdout"] = [line for line in b["stdout"] if not line.startswith(f"{fn}: ")]  # type: ignore[index,union-attr]
    if a == b:
        return Difference(key, False, calls, skipped, "", now_run)
    where = []
    kinds = []
    if a["module"] != b["module"]:
        where.append(f"module: {a['module']} -> {b['module']}")
        kinds.append(change_kind(a["module"], b["module"]))
    for fn in sorted(set(a["calls"]) | set(b["calls"])):  # type: ignore[arg-type]
        x, y = a["calls"].get(fn), b["calls"].get(fn)  # type: ignore[union-attr]
        if x != y:
            where.append(f"{fn}(): {x} -> {y}")
            kinds.append(change_kind(x, y))
    if a["stdout"] != b["stdout"]:
        diff = [line for line in b["stdout"] if line not in a["stdout"]][:2]  # type: ignore[operator]
        where.append(f"printed differently: {diff}")
        kinds.append(MESSAGE_WRONG)
    return Difference(key, True, calls, skipped, "; ".join(where), now_run, tuple(kinds))


def _drop_unstable(a: dict, b: dict, again: dict) -> None:  # type: ignore[type-arg]
    """Remove from records ``a`` and ``b`` what differs between two runs of the original (``a`` and ``again``)."""
    if a["module"] != again["module"]:
        a["module"] = b["module"] = "unstable"
    for fn in list(a["calls"]):
        if a["calls"].get(fn) != again["calls"].get(fn):
            a["calls"][fn] = b["calls"][fn] = "unstable"
    if a["stdout"] != again["stdout"]:
        stable = set(a["stdout"]) & set(again["stdout"])
        a["stdout"] = [line for line in a["stdout"] if line in stable]
        b["stdout"] = [line for line in b["stdout"] if line in stable]
