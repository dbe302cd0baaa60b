"""Hostile tries against the ``accel`` commands that write files or read what a user names.

Each try runs one command in a fresh folder, in a subprocess with a time limit, and
judges it on four counts:

* **traceback**: a raw Python traceback on stderr, or an exit code outside the documented set;
* **hang**: the command did not finish within its time limit;
* **lost**: a file is missing, half-written, or left in a state the next run cannot use
  (checked after the fault, and again after the cleanup command a user would run);
* **outside**: a file outside the command's place changed (a sentinel folder, hashed).

The classes of tries (``--list`` names them all):

* ``kill``: SIGKILL before every file-system operation of each writing command (see
  ``faults.py``), then the state is checked, then the command a user would run next
  (run again, or ``accel patches revert``) must leave a whole result and no debris;
* ``enospc``: the disk is full at every creating operation: one error, nothing half-written;
* ``crafted``: FIFOs, malformed recordings, manifests and series, hostile environment values;
* ``plugin``: third-party plugins (real entry points on ``PYTHONPATH``) that exit, raise a
  ``BaseException``, print, claim a built-in name, share an entry-point name, raise in a scan
  rule, ship a broken command, or sleep at import: the host stays up, names the plugin, and
  its machine-readable output stays valid JSON;
* ``source``: CR-only and mixed line endings, malformed and deep notebooks, a file saved while
  ``accel port --write`` runs, SIGTERM during a port of 300 files;
* ``config``: ``device_index = true``, a UTF-8 BOM, deep TOML arrays, ``ACCEL_SCAN_IGNORE``
  truncated or deep;
* ``run``: CUDA in ``atexit`` handlers, finalizers and daemon threads under ``accel run``,
  another user's ``accel-run-*`` folder, a missing script for ``patching.run``;
* ``metrics``: deep, infinite, non-numeric and huge values in a script's metrics, a metrics
  file replaced by a folder, ``ACCEL_METRICS_FILE`` on ``/dev/full`` or a folder.

::

    python tests/hostile/tries.py                 # every try (a few minutes on 2 CPUs)
    python tests/hostile/tries.py --sample 20     # 20 tries spread over every class
    python tests/hostile/tries.py --only kill:patches-apply

Exit status 0 when every try is clean. Nothing is downloaded; everything happens under a
temporary folder (``--keep`` keeps it).

Why one script of ~870 lines: it runs on its own, outside the test package (``test_tries_sample``
starts it as a subprocess), and every try is a small function next to the setup and verdict
helpers (``World``, ``Verdict``) all tries share; split, one try would be read across files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAULTS = Path(__file__).with_name("faults.py")
TIMEOUT_S = 60.0
TRACEBACK = "Traceback (most recent call last)"
JOURNAL = ("new", "old", "trash")


@dataclass
class Outcome:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float

    @property
    def hung(self) -> bool:
        return self.returncode is None


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = TIMEOUT_S) -> Outcome:
    """Run ``python argv...`` in its own process group; kill the group at ``timeout``."""
    full = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    for key in [k for k in full if k.startswith("ACCEL_") and k not in (env or {})]:
        del full[key]
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *argv], cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    return Outcome(code, out, err, time.perf_counter() - start)


def accel(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = TIMEOUT_S) -> Outcome:
    return run(["-m", "accel_abstraction", *args], cwd, env, timeout)


def faulted(mode: str, at: int, args: list[str], cwd: Path) -> Outcome:
    return run([str(FAULTS), mode, str(at), "--", *args], cwd)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_hashes(root: Path) -> dict[str, str]:
    """``{relative path: SHA-256}`` of every file under ``root`` (links: where they point)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = sha(path)
    return out


@dataclass
class Verdict:
    name: str
    cls: str
    problems: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, kind: str, what: str) -> None:
        self.problems.setdefault(kind, []).append(what)

    def judge(self, outcome: Outcome, allowed: tuple[int, ...], what: str) -> None:
        self.seconds += outcome.seconds
        if outcome.hung:
            self.add("hang", f"{what}: no end within {TIMEOUT_S:g} s")
        elif TRACEBACK in outcome.stderr or outcome.returncode not in allowed:
            self.add(
                "traceback",
                f"{what}: exit {outcome.returncode} (allowed {allowed}): {outcome.stderr.strip()[-600:]}",
            )

    def one_error_line(self, outcome: Outcome, what: str, needle: str) -> None:
        """An error exit says what went wrong on one line, the one naming ``needle``."""
        lines = [line for line in outcome.stderr.splitlines() if needle.lower() in line.lower()]
        if outcome.returncode not in (0, None) and len(lines) != 1:
            self.add("traceback", f"{what}: wanted one error line naming {needle!r}, got {outcome.stderr.strip()[-400:]!r}")


@dataclass
class Try:
    name: str
    cls: str
    body: Callable[[Path, Verdict], None]


# ----------------------------------------------------------------------------- fixtures


class World:
    """What the tries share: the installed torch's patch series and a clean port result."""

    def __init__(self, base: Path) -> None:
        from accel_abstraction.patching.series import installed_torch_root, load_series, torch_version_at

        self.base = base
        self.torch_root = installed_torch_root()
        self.series = load_series(torch_version_at(self.torch_root))
        self._ported: dict[str, bytes] | None = None

    def site(self, dest: Path) -> Path:
        """A minimal torch tree: the files the series touches and version.py."""
        for rel in [*self.series.files, "torch/version.py"]:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.torch_root / rel, dest / rel)
        return dest

    def stock(self) -> dict[str, str]:
        return {rel: sha(self.torch_root / rel) for rel in self.series.files}

    def ported(self) -> dict[str, bytes]:
        """The port tree's files after a clean ``accel port --write``."""
        if self._ported is None:
            tree = port_tree(self.base / "port-reference")
            out = accel(["port", "--write", str(tree)], self.base)
            assert out.returncode == 0, out.stderr
            self._ported = {p.name: p.read_bytes() for p in tree.glob("*.py")}
        return self._ported


PORT_FILES = {
    f"m{i}.py": (
        "import torch\n\n"
        f"def step{i}(x):\n"
        "    if torch.cuda.is_available():\n"
        "        torch.cuda.synchronize()\n"
        f"    return x.cuda() * {i}\n"
    )
    for i in range(4)
}


def port_tree(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in PORT_FILES.items():
        (dest / name).write_text(text)
    return dest


def overlay_problems(world: World, target: Path) -> list[str]:
    """Why ``target`` is not a whole overlay for the series ('' each: it is)."""
    try:
        manifest = json.loads((target / "manifest.json").read_text())
    except (OSError, ValueError) as exc:
        return [f"{target}: no readable manifest ({exc})"]
    out = []
    for rel, hashes in manifest["files"].items():
        path = target / rel
        if not path.is_file() or sha(path) != hashes["patched_sha256"]:
            out.append(f"{target}/{rel} missing or not the patched file")
    if sorted(manifest["files"]) != sorted(world.series.files):
        out.append(f"{target}: manifest names other files")
    return out


def debris(folder: Path) -> list[str]:
    """Journal directories and temporary files left in ``folder``."""
    return sorted(
        p.name for p in folder.iterdir() if re.search(r"\.accel-(new|old|trash|tmp|port)$", p.name)
    )


def torch_state(world: World, site: Path) -> str:
    """``stock``, ``patched``, ``mixed`` (each file whole, some of each) or ``broken``."""
    from accel_abstraction.patching.check import patched_texts

    patched = {rel: hashlib.sha256(new.encode()).hexdigest() for rel, (_, new) in patched_texts(world.series, world.torch_root).items()}
    stock = world.stock()
    states = set()
    for rel in world.series.files:
        h = sha(site / rel)
        states.add("stock" if h == stock[rel] else "patched" if h == patched[rel] else "broken")
    if "broken" in states:
        return "broken"
    return states.pop() if len(states) == 1 else "mixed"


# ----------------------------------------------------------------------------- kill / enospc


_COUNTS: dict[str, tuple[int, int]] = {}


def _count(world: World, writer: str, which: str) -> int:
    """How many file-system operations (``which``: ``operations`` or ``creating``) ``writer`` does whole."""
    if writer not in _COUNTS:
        probe = world.base / f"count-{writer}"
        probe.mkdir()
        args, _ = WRITERS[writer](world, probe)
        out = run([str(FAULTS), "count", "0", "--", *args], probe)
        match = re.search(r"faults: (\d+) operations, (\d+) creating", out.stderr)
        assert match, out.stderr
        _COUNTS[writer] = (int(match.group(1)), int(match.group(2)))
    return _COUNTS[writer][0 if which == "operations" else 1]


Setup = Callable[[World, Path], tuple[list[str], Callable[[Verdict, Outcome], None]]]


def _patches_overlay(replace: bool) -> Setup:
    def setup(world: World, d: Path) -> tuple[list[str], Callable[[Verdict, Outcome], None]]:
        target = d / "ov"
        if replace:
            assert accel(["patches", "apply", "--target", str(target)], d).returncode == 0
        args = ["patches", "apply", "--target", str(target)]

        def check(v: Verdict, _out: Outcome) -> None:
            if replace:  # a whole overlay at target, or the old one in the journal
                whole = [p for p in (target, d / ".ov.accel-old") if p.is_dir() and not overlay_problems(world, p)]
                if not whole and not (d / ".ov.accel-new" / "manifest.json").is_file():
                    v.add("lost", f"killed replace: no whole overlay left ({sorted(x.name for x in d.iterdir())})")
            elif target.exists() and overlay_problems(world, target):
                v.add("lost", f"half overlay at the final name: {overlay_problems(world, target)[:2]}")
            follow = "revert" if zlib.crc32(v.name.encode()) % 2 else "apply"
            again = accel(["patches", follow, "--target", str(target)], d)
            v.judge(again, (0, 2) if follow == "revert" and not replace else (0,), f"then accel patches {follow}")
            if follow == "apply" and overlay_problems(world, target):
                v.add("lost", f"rerun did not leave a whole overlay: {overlay_problems(world, target)[:2]}")
            if follow == "revert" and target.exists():
                v.add("lost", "revert left the overlay")
            if debris(d):
                v.add("lost", f"debris after {follow}: {debris(d)}")

        return args, check

    return setup


def _patches_in_place(world: World, d: Path) -> tuple[list[str], Callable[[Verdict, Outcome], None]]:
    site = world.site(d / "site")
    state = d / "state"
    args = ["patches", "apply", "--in-place", "--torch-root", str(site), "--target", str(state)]

    def check(v: Verdict, _out: Outcome) -> None:
        if torch_state(world, site) == "broken":
            v.add("lost", "a torch file is neither stock nor patched after the kill")
        follow = "revert" if zlib.crc32(v.name.encode()) % 2 else "apply"
        cmd = ["patches", follow, "--torch-root", str(site), "--target", str(state)]
        again = accel(cmd + (["--in-place"] if follow == "apply" else []), d)
        v.judge(again, (0, 2) if follow == "revert" else (0,), f"then accel patches {follow}")
        want = "patched" if follow == "apply" else "stock"
        if follow == "revert" and again.returncode == 2 and "nothing at" not in again.stderr:
            v.add("lost", f"revert refused: {again.stderr.strip()[-300:]}")
        if torch_state(world, site) != want:
            v.add("lost", f"after {follow}: torch is {torch_state(world, site)}, not {want}")
        if debris(d):
            v.add("lost", f"debris after {follow}: {debris(d)}")

    return args, check


def _patches_revert(in_place: bool) -> Setup:
    def setup(world: World, d: Path) -> tuple[list[str], Callable[[Verdict, Outcome], None]]:
        site = world.site(d / "site")
        state = d / "state"
        root = ["--torch-root", str(site)]
        apply = ["patches", "apply", *(["--in-place"] if in_place else []), *root, "--target", str(state)]
        assert accel(apply, d).returncode == 0
        args = ["patches", "revert", *root, "--target", str(state)]

        def check(v: Verdict, _out: Outcome) -> None:
            if torch_state(world, site) == "broken":
                v.add("lost", "a torch file is neither stock nor patched after the kill")
            again = accel(args, d)
            v.judge(again, (0, 2), "then accel patches revert")
            if again.returncode == 2 and "nothing at" not in again.stderr:
                v.add("lost", f"revert refused after the kill: {again.stderr.strip()[-300:]}")
            if state.exists() or debris(d) or torch_state(world, site) != "stock":
                v.add("lost", f"after revert: state {state.exists()}, debris {debris(d)}, torch {torch_state(world, site)}")

        return args, check

    return setup


def _port(world: World, d: Path) -> tuple[list[str], Callable[[Verdict, Outcome], None]]:
    tree = port_tree(d / "src")
    ported = world.ported()
    args = ["port", "--write", str(tree)]

    def check(v: Verdict, _out: Outcome) -> None:
        for name, text in PORT_FILES.items():
            now = (tree / name).read_bytes()
            if now not in (text.encode(), ported[name]):
                v.add("lost", f"{name} is neither the original nor the ported file")
        again = accel(args, d)
        v.judge(again, (0,), "then accel port --write")
        if {p.name: p.read_bytes() for p in tree.glob("*.py")} != ported or debris(tree):
            v.add("lost", f"rerun did not finish the port (debris {debris(tree)})")

    return args, check


def _scan(world: World, d: Path) -> tuple[list[str], Callable[[Verdict, Outcome], None]]:
    tree = port_tree(d / "src")
    report = d / "report.txt"
    report.write_text("the previous report\n")
    args = ["scan", "--exit-zero", str(tree), "-o", str(report)]

    def check(v: Verdict, _out: Outcome) -> None:
        text = report.read_text()
        if text != "the previous report\n" and not text.startswith(f"{tree}/m0.py:"):
            v.add("lost", f"report is neither the old nor a whole new one: {text[:80]!r}")
        again = accel(args, d)
        v.judge(again, (0,), "then accel scan -o")
        if debris(d):
            v.add("lost", f"debris after a rerun: {debris(d)}")

    return args, check


def _whole_json(path: Path) -> bool:
    try:
        return json.loads(path.read_text()).get("schema") == "accel-parity"
    except (OSError, ValueError, AttributeError):
        return False


PARITY_SCRIPT = "import accel_abstraction as accel\nfor i in range(3):\n    accel.log_metric(step=i, loss=1.0 / (i + 1))\n"


def _parity_record(world: World, d: Path) -> tuple[list[str], Callable[[Verdict, Outcome], None]]:
    (d / "train.py").write_text(PARITY_SCRIPT)
    record = d / "rec.json"
    record.write_text("the previous recording\n")
    args = ["parity", "train.py", "--backends", "cpu", "--record", str(record), "--no-progress"]

    def check(v: Verdict, _out: Outcome) -> None:
        if record.read_text() != "the previous recording\n" and not _whole_json(record):
            v.add("lost", "--record is neither the old file nor a whole recording")
        out_json = d / "parity-out" / "parity.json"
        if out_json.exists() and not _whole_json(out_json):
            v.add("lost", "parity.json is half-written")
        again = accel(args, d)
        v.judge(again, (0,), "then accel parity --record")
        if not (_whole_json(record) and _whole_json(out_json)) or debris(d) or debris(d / "parity-out"):
            v.add("lost", f"rerun: recording whole {_whole_json(record)}, debris {debris(d) + debris(d / 'parity-out')}")

    return args, check


WRITERS: dict[str, Setup] = {
    "patches-apply": _patches_overlay(replace=False),
    "patches-replace": _patches_overlay(replace=True),
    "patches-in-place": _patches_in_place,
    "patches-revert-overlay": _patches_revert(in_place=False),
    "patches-revert-in-place": _patches_revert(in_place=True),
    "port-write": _port,
    "scan-output": _scan,
    "parity-record": _parity_record,
}
#: Writers too slow to fault at every point (each run starts the script): at most this many.
POINTS_CAP = {"parity-record": 5}


def spread(total: int, points: int) -> list[int]:
    """Up to ``points`` operation numbers from 1 to ``total``, evenly spread, both ends included."""
    if points <= 0 or total <= points:
        return list(range(1, total + 1))
    return sorted({1 + round(k * (total - 1) / (points - 1)) for k in range(points)})


def _after_kill(v: Verdict, out: Outcome) -> None:
    if out.hung:
        v.add("hang", "the killed command did not end")
    elif out.returncode not in (-signal.SIGKILL, 0):
        v.judge(out, (-signal.SIGKILL,), "killed command")


def _after_full_disk(v: Verdict, d: Path, args: list[str], out: Outcome, before: dict[str, str]) -> None:
    # exit 0 when the full disk hit a write the command does not need (a library's cache file):
    # then its results are checked like any run's
    v.judge(out, (0, 1, 2), "the command on a full disk")
    v.one_error_line(out, "full disk", "no space left")
    if out.returncode == 0:
        return
    if debris(d) or any(debris(p) for p in d.iterdir() if p.is_dir() and not p.is_symlink()):
        v.add("lost", f"debris after the full disk: {debris(d)}")
    if args[0] == "patches" and "--in-place" not in args:
        # revert restores torch file by file (each whole): only its own state must be as before
        after = tree_hashes(d)
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        if {k for k in changed if not (args[1] == "revert" and k.startswith("site/"))}:
            v.add("lost", f"the failed command changed {sorted(changed)[:3]}")


#: fault -> the operations it is put at (see faults.py)
FAULTS_JUDGED = {"kill": "operations", "enospc": "creating"}


def fault_tries(world: World, points: int, fault: str, fast: bool = False) -> Iterator[Try]:
    """``fault`` (``kill`` or ``enospc``) at up to ``points`` operations of each writing command
    (``fast``: not the slow ones of :data:`POINTS_CAP`)."""
    for writer, setup in WRITERS.items():
        if fast and writer in POINTS_CAP:
            continue
        total = _count(world, writer, FAULTS_JUDGED[fault])
        for at in spread(total, min(points or total, POINTS_CAP.get(writer, total))):

            def body(d: Path, v: Verdict, setup: Setup = setup, at: int = at) -> None:
                args, check = setup(world, d)
                before = tree_hashes(d)
                out = faulted(fault, at, args, d)
                if fault == "kill":
                    _after_kill(v, out)
                else:
                    _after_full_disk(v, d, args, out, before)
                check(v, out)

            yield Try(f"{fault}:{writer}@{at}", fault, body)


# ----------------------------------------------------------------------------- crafted inputs


def _fifo(d: Path, name: str) -> Path:
    path = d / name
    os.mkfifo(path)
    return path


def _reference_shapes() -> dict[str, str]:
    good_run = {"label": "cpu", "backend": "cpu", "records": [{"step": 0, "loss": 1.0}]}
    doc = {"schema": "accel-parity", "schema_version": 2, "reference": "cpu", "metric": "loss", "runs": [good_run]}

    def with_run(**changes: object) -> str:
        return json.dumps({**doc, "runs": [{**good_run, **changes}]})

    return {
        "empty": "",
        "list": "[1, 2, 3]",
        "string": '"runs"',
        "runs-not-list": json.dumps({**doc, "runs": {"cpu": 1}}),
        "schema-newer": json.dumps({**doc, "schema_version": 99}),
        "schema-string": json.dumps({**doc, "schema_version": "2"}),
        "metric-list": json.dumps({**doc, "metric": ["loss"]}),
        "records-strings": with_run(records=[{"step": "zero", "loss": "one"}]),
        "records-value-dict": with_run(records=[{"step": 0, "loss": {"a": 1}}]),
        "env-list": with_run(env=["A=1"]),
        "facts-string": with_run(facts="fast"),
        "returncode-string": with_run(returncode="0"),
        "no-records": with_run(records=[]),
        "deep": "[" * 100000 + "]" * 100000,
        "step-float": with_run(records=[{"step": 1.5, "loss": 1.0}]),
        "step-bool": with_run(records=[{"step": True, "loss": 1.0}]),
        "not-utf8": "\udcff",
        "failed-run": with_run(error="boom"),
    }


def crafted_tries(world: World) -> Iterator[Try]:
    script = "print('iter 1: loss 1.0')\n"

    for shape, text in _reference_shapes().items():

        def ref_body(d: Path, v: Verdict, text: str = text) -> None:
            (d / "train.py").write_text(script)
            ref = d / "ref.json"
            ref.write_bytes(text.encode("utf-8", "surrogateescape"))
            out = accel(["parity", "train.py", "--backends", "cpu", "--reference", str(ref), "--no-plot"], d)
            v.judge(out, (2,), "accel parity --reference (malformed)")
            v.one_error_line(out, "malformed reference", "--reference")

        yield Try(f"crafted:reference-{shape}", "crafted", ref_body)

    def fifo_reference(d: Path, v: Verdict) -> None:
        (d / "train.py").write_text(script)
        out = accel(["parity", "train.py", "--backends", "cpu", "--reference", str(_fifo(d, "ref.json")), "--no-plot"], d)
        v.judge(out, (2,), "accel parity --reference FIFO")
        v.one_error_line(out, "FIFO reference", "FIFO")

    def fifo_manifest(d: Path, v: Verdict) -> None:
        (d / "ov").mkdir()
        _fifo(d / "ov", "manifest.json")
        for action in ("apply", "revert"):
            out = accel(["patches", action, "--target", str(d / "ov")], d)
            v.judge(out, (2,), f"accel patches {action} with a FIFO manifest")
            v.one_error_line(out, "FIFO manifest", "FIFO")

    def fifo_run(d: Path, v: Verdict) -> None:
        out = accel(["run", str(_fifo(d, "train.py"))], d)
        v.judge(out, (2,), "accel run FIFO")
        v.one_error_line(out, "FIFO script", "not a regular file")

    def catastrophic_metric(d: Path, v: Verdict) -> None:
        (d / "train.py").write_text("print('iter 1: loss ' + 'a' * 40 + '!')\n")
        regex = r"iter (?P<step>\d+): loss (?P<loss>(a+)+)$"
        out = accel(["parity", "train.py", "--backends", "cpu", "--record", "rec.json", "--metric", regex, "--no-plot", "--no-progress"], d)
        v.judge(out, (2,), "accel parity --metric (catastrophic)")
        v.one_error_line(out, "catastrophic regex", "backtracks")

    def scan_jobs(d: Path, v: Verdict) -> None:
        port_tree(d / "src")
        out = accel(["scan", "src", "-j", "100000"], d)
        v.judge(out, (2,), "accel scan -j 100000")

    yield Try("crafted:fifo-reference", "crafted", fifo_reference)
    yield Try("crafted:fifo-manifest", "crafted", fifo_manifest)
    yield Try("crafted:fifo-run-target", "crafted", fifo_run)
    yield Try("crafted:metric-backtracking", "crafted", catastrophic_metric)
    yield Try("crafted:scan-jobs-unbounded", "crafted", scan_jobs)
    yield from _manifest_tries(world)
    yield from _series_tries(world)
    yield from _env_tries()
    yield from _link_tries()


def _manifest_tries(world: World) -> Iterator[Try]:
    """In-place state and overlays whose manifest points somewhere else."""

    def crafted_state(d: Path, mutate: Callable[[dict, Path, Path], None]) -> tuple[Path, Path, Path]:
        site = world.site(d / "site")
        state = d / "state"
        assert accel(["patches", "apply", "--in-place", "--torch-root", str(site), "--target", str(state)], d).returncode == 0
        outside = d / "outside"
        (outside / "torch").mkdir(parents=True)
        (outside / "torch" / "version.py").write_text((site / "torch" / "version.py").read_text())
        (outside / "precious.py").write_text("mine\n")
        manifest = json.loads((state / "manifest.json").read_text())
        mutate(manifest, outside, site)
        (state / "manifest.json").write_text(json.dumps(manifest))
        return site, state, outside

    def redirect_root(m: dict, outside: Path, site: Path) -> None:
        m["torch_root"] = str(outside)

    def escape_path(m: dict, outside: Path, site: Path) -> None:
        rel, hashes = next(iter(m["files"].items()))
        m["files"] = {"torch/../../outside/precious.py": hashes}

    def not_torch(m: dict, outside: Path, site: Path) -> None:
        rel, hashes = next(iter(m["files"].items()))
        m["files"] = {"precious.py": hashes}

    for name, mutate in (("root-elsewhere", redirect_root), ("dotdot-path", escape_path), ("not-torch", not_torch)):

        def body(d: Path, v: Verdict, mutate: Callable[[dict, Path, Path], None] = mutate) -> None:
            site, state, outside = crafted_state(d, mutate)
            before = tree_hashes(outside)
            out = accel(["patches", "revert", "--target", str(state)], d)
            v.judge(out, (2,), "accel patches revert (crafted manifest)")
            out = accel(["patches", "revert", "--torch-root", str(outside), "--target", str(state)], d)
            v.judge(out, (2,), "accel patches revert --torch-root outside (crafted manifest)")
            if tree_hashes(outside) != before:
                v.add("outside", "revert wrote into the folder a crafted manifest named")

        yield Try(f"crafted:manifest-{name}", "crafted", body)

    def overlay_user_files(d: Path, v: Verdict) -> None:
        target = d / "ov"
        assert accel(["patches", "apply", "--target", str(target)], d).returncode == 0
        (target / "notes.txt").write_text("mine\n")
        out = accel(["patches", "revert", "--target", str(target)], d)
        v.judge(out, (0,), "accel patches revert of an overlay holding a user's file")
        if not (target / "notes.txt").is_file():
            v.add("outside", "revert deleted a file apply never wrote")
        out = accel(["patches", "apply", "--target", str(target)], d)  # the user's folder now: not replaced
        v.judge(out, (2,), "accel patches apply onto the kept folder")
        v.one_error_line(out, "apply onto a user's folder", "holds no manifest.json")
        if not (target / "notes.txt").is_file():
            v.add("outside", "apply replaced a folder holding a user's file")

    def overlay_foreign_module(d: Path, v: Verdict) -> None:
        target = d / "ov"
        assert accel(["patches", "apply", "--target", str(target)], d).returncode == 0
        manifest = json.loads((target / "manifest.json").read_text())
        (target / "json").mkdir()
        (target / "json" / "__init__.py").write_text("raise SystemExit('served by the overlay')\n")
        digest = sha(target / "json" / "__init__.py")
        manifest["files"]["json/__init__.py"] = {"stock_sha256": digest, "patched_sha256": digest}
        (target / "manifest.json").write_text(json.dumps(manifest))
        code = (
            "from accel_abstraction.patching import activate\n"
            f"activate({str(target)!r})\nimport json\nprint('stock json')\n"
        )
        out = run(["-c", code], d)
        if "served by the overlay" in out.stdout + out.stderr:
            v.add("outside", "the overlay served a module that is not torch's")
        if out.returncode == 0 or "unsafe file path" not in out.stderr:
            v.add("traceback", f"activate accepted a non-torch module: {out.stderr[-300:]}")

    yield Try("crafted:overlay-user-files", "crafted", overlay_user_files)
    yield Try("crafted:overlay-foreign-module", "crafted", overlay_foreign_module)


def _series_tries(world: World) -> Iterator[Try]:
    shapes = {
        "binary-series": b"\x00\x01\x02\n",
        "dir-listed": b"..\n",
        "absent-listed": b"0001-nope.patch\n",
        "only-comments": b"# nothing\n",
        "huge-line": b"x" * 100000 + b"\n",
        "not-utf8": b"\xff\xfe\n",
    }
    for shape, content in shapes.items():

        def body(d: Path, v: Verdict, content: bytes = content) -> None:
            patches = d / "patches"
            shutil.copytree(world.series.directory, patches / "pytorch" / world.series.torch_version)
            (patches / "pytorch" / world.series.torch_version / "series").write_bytes(content)
            for action in (["check"], ["apply", "--target", str(d / "ov")]):
                out = accel(["patches", *action], d, env={"ACCEL_PATCHES_DIR": str(patches)})
                v.judge(out, (2,), f"accel patches {action[0]} (series {content[:10]!r})")
                v.one_error_line(out, "malformed series", "series")

        yield Try(f"crafted:series-{shape}", "crafted", body)

    def fifo_patch(d: Path, v: Verdict) -> None:
        patches = d / "patches"
        version = patches / "pytorch" / world.series.torch_version
        version.mkdir(parents=True)
        (version / "series").write_text("0001-pipe.patch\n")
        _fifo(version, "0001-pipe.patch")
        out = accel(["patches", "check"], d, env={"ACCEL_PATCHES_DIR": str(patches)})
        v.judge(out, (2,), "accel patches check (a FIFO patch)")

    yield Try("crafted:series-fifo-patch", "crafted", fifo_patch)


def _env_tries() -> Iterator[Try]:
    def plugins_comma(d: Path, v: Verdict) -> None:
        out = accel(["info"], d, env={"ACCEL_PLUGINS": ","})
        v.judge(out, (2,), "accel info with ACCEL_PLUGINS=','")
        v.one_error_line(out, "ACCEL_PLUGINS=','", "ACCEL_PLUGINS")

    def autoload_off(d: Path, v: Verdict) -> None:
        code = "import accel_abstraction as a\ntry:\n a.device()\nexcept a.AccelError as e:\n print(e)\n"
        got = run(["-c", code], d, env={"ACCEL_DISABLE_PLUGIN_AUTOLOAD": "1"})
        v.judge(got, (0,), "accel.device() with ACCEL_DISABLE_PLUGIN_AUTOLOAD=1")
        if "ACCEL_DISABLE_PLUGIN_AUTOLOAD" not in got.stdout:
            v.add("traceback", f"'no backend' does not name ACCEL_DISABLE_PLUGIN_AUTOLOAD: {got.stdout.strip()}")

    yield Try("crafted:env-plugins-comma", "crafted", plugins_comma)
    yield Try("crafted:env-autoload-off", "crafted", autoload_off)
    for value in ("-1", "0", "inf", "nan", "1e300", "abc"):

        def timeout(d: Path, v: Verdict, value: str = value) -> None:
            (d / "dist.py").write_text("import accel_abstraction as accel\naccel.init_distributed()\n")
            out = accel(["run", "--report", "none", "dist.py"], d, env={"ACCEL_DIST_TIMEOUT": value})
            v.judge(out, (2,), f"init_distributed under accel run with ACCEL_DIST_TIMEOUT={value}")
            v.one_error_line(out, "ACCEL_DIST_TIMEOUT", "ACCEL_DIST_TIMEOUT")

        yield Try(f"crafted:env-dist-timeout-{value}", "crafted", timeout)


def _link_tries() -> Iterator[Try]:
    def symlink_out(d: Path, v: Verdict) -> None:
        tree = port_tree(d / "src")
        outside = port_tree(d / "outside")
        (tree / "link.py").symlink_to(outside / "m0.py")
        before = tree_hashes(outside)
        out = accel(["port", "--write", str(tree)], d)
        v.judge(out, (1,), "accel port --write with a symlink leaving the tree")
        if tree_hashes(outside) != before:
            v.add("outside", "port --write rewrote a file outside the tree through a symlink")

    def hard_link(d: Path, v: Verdict) -> None:
        tree = port_tree(d / "src")
        (d / "other").mkdir()
        os.link(tree / "m1.py", d / "other" / "alias.py")
        out = accel(["port", "--write", str(tree)], d)
        v.judge(out, (1,), "accel port --write with a hard link")
        if os.stat(tree / "m1.py").st_ino != os.stat(d / "other" / "alias.py").st_ino:
            v.add("lost", "port --write silently broke a hard link")

    def run_output_cwd(d: Path, v: Verdict) -> None:
        (d / "elsewhere").mkdir()
        (d / "train.py").write_text("import os\nos.chdir('elsewhere')\n")
        out = accel(["run", "-o", "report.json", "train.py"], d)
        v.judge(out, (0,), "accel run -o rel.json (script chdirs)")
        if not (d / "report.json").is_file() or (d / "elsewhere" / "report.json").exists():
            v.add("outside", "accel run -o wrote relative to the script's cwd")

    def two_ports(d: Path, v: Verdict) -> None:
        tree = port_tree(d / "src")
        for i in range(40):
            (tree / f"n{i}.py").write_text(PORT_FILES["m0.py"])
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "accel_abstraction", "port", "--write", str(tree)],
                cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            for _ in range(2)
        ]
        for proc in procs:
            try:
                _, err = proc.communicate(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                v.add("hang", "two concurrent ports")
                continue
            if proc.returncode != 0 or TRACEBACK in err:
                v.add("traceback", f"concurrent port: exit {proc.returncode}: {err[-300:]}")
        left = [p.name for p in tree.glob("*.py") if "torch.cuda" in p.read_text()]
        if left or debris(tree):
            v.add("lost", f"two ports left files unported {left[:3]} / debris {debris(tree)}")

    def full_device(d: Path, v: Verdict) -> None:
        port_tree(d / "src")
        (d / "train.py").write_text(PARITY_SCRIPT)
        for args, codes in (
            (["scan", "src", "-o", "/dev/full"], (2,)),
            (["parity", "train.py", "--backends", "cpu", "--no-progress", "--no-plot", "--record", "/dev/full"], (2,)),
            (["run", "-o", "/dev/full", "train.py"], (0,)),  # the script's status; the report's failure said
        ):
            out = accel(args, d, env={"ACCEL_BACKEND": "cpu"})
            v.judge(out, codes, f"accel {' '.join(args)}")
            v.one_error_line(out, "output file on a full device", "no space left")

    def null_device(d: Path, v: Verdict) -> None:
        port_tree(d / "src")
        out = accel(["scan", "--exit-zero", "src", "-o", "/dev/null"], d)
        v.judge(out, (0,), "accel scan -o /dev/null")
        if not Path("/dev/null").is_char_device():
            v.add("outside", "accel scan -o /dev/null replaced the device")

    yield Try("crafted:output-dev-full", "crafted", full_device)
    yield Try("crafted:output-dev-null", "crafted", null_device)
    yield Try("crafted:port-symlink-out", "crafted", symlink_out)
    yield Try("crafted:port-hard-link", "crafted", hard_link)
    yield Try("crafted:run-output-relative", "crafted", run_output_cwd)
    yield Try("crafted:port-concurrent", "crafted", two_ports)


# ----------------------------------------------------------------------------- plugins (issue 38)


PLUGIN_BACKEND = """
from accel_abstraction import hookimpl
from accel_abstraction.features import Availability
from accel_abstraction.interface import Backend
from accel_abstraction.registry import BackendSpec

class Mine(Backend):
    name = "{name}"
    device_type = "cpu"

    def availability(self):
        return Availability.yes()

@hookimpl
def accel_register_backends(register):
    register(BackendSpec("{name}", Mine, priority={priority}))
"""


def plugin_dist(site: Path, name: str, source: str, dist: str | None = None, module: str | None = None) -> Path:
    """An installed-looking distribution with entry point ``name`` in ``site`` (put it on PYTHONPATH)."""
    dist = dist or f"third-{name}"
    module = module or f"{name}_plugin"
    site.mkdir(exist_ok=True)
    (site / f"{module}.py").write_text(source)
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[accel_abstraction]\n{name} = {module}\n")
    return site


def _valid_json(v: Verdict, out: Outcome, what: str) -> object:
    try:
        return json.loads(out.stdout)
    except ValueError:
        v.add("traceback", f"{what}: stdout is not JSON: {out.stdout[:120]!r}")
        return None


def _plugin_status(report: object, name: str) -> str:
    plugins = report.get("plugins", []) if isinstance(report, dict) else []
    return next((p["status"] for p in plugins if p["name"] == name), "absent")


def _plugin_tries() -> Iterator[Try]:
    coupled = "import torch\nx = torch.zeros(1).cuda()\n"
    import_faults = {
        "sys-exit": "import sys\nsys.exit(3)\n",
        "base-exception": "class Stop(BaseException):\n    pass\nraise Stop('no')\n",
        "hook-exit": "from accel_abstraction import hookimpl\n@hookimpl\ndef accel_register_backends(register):\n    raise SystemExit(4)\n",
    }
    for shape, source in import_faults.items():

        def fault(d: Path, v: Verdict, source: str = source) -> None:
            env = {"PYTHONPATH": str(plugin_dist(d / "site", "hostile", source))}
            out = accel(["info", "--json"], d, env)
            v.judge(out, (0,), "accel info --json with a plugin that exits")
            if _plugin_status(_valid_json(v, out, "accel info --json"), "hostile") != "failed":
                v.add("traceback", "the plugin is not recorded as failed")
            got = run(["-c", "import accel_abstraction as a; print(a.device())"], d, env)
            v.judge(got, (0,), "accel.device() with a plugin that exits")
            if "cpu" not in got.stdout:
                v.add("traceback", f"accel.device() did not select cpu: {got.stdout!r}")

        yield Try(f"plugin:{shape}", "plugin", fault)

    def chatty(d: Path, v: Verdict) -> None:
        source = (
            "print('import noise')\nfrom accel_abstraction import hookimpl\n"
            "@hookimpl\ndef accel_env_info(backend):\n    print('hook noise')\n    return []\n"
            "@hookimpl\ndef accel_scan_rules(register):\n    print('rules noise')\n"
        )
        env = {"PYTHONPATH": str(plugin_dist(d / "site", "chatty", source)), "ACCEL_BACKEND": "cpu"}
        (d / "a.py").write_text(coupled)
        for args in (
            ["info", "--json"],
            ["scan", "--format", "json", "a.py"],
            ["scan", "--format", "sarif", "a.py"],
            ["run", "--report", "json", "a.py"],
        ):
            out = accel(args, d, env)
            v.judge(out, (0,), f"accel {' '.join(args)} with a chatty plugin")
            _valid_json(v, out, f"accel {' '.join(args)}")

    def cpu_clash(d: Path, v: Verdict) -> None:
        env = {"PYTHONPATH": str(plugin_dist(d / "site", "aaa", PLUGIN_BACKEND.format(name="cpu", priority=999)))}
        out = accel(["info", "--json"], d, env)
        v.judge(out, (0,), "accel info with a third-party 'cpu' backend")
        report = _valid_json(v, out, "accel info --json")
        if _plugin_status(report, "cpu") != "loaded" or _plugin_status(report, "aaa") != "failed":
            v.add("traceback", "the built-in cpu plugin did not win the name clash")

    def twin(d: Path, v: Verdict) -> None:
        site = plugin_dist(d / "site", "twin", PLUGIN_BACKEND.format(name="twina", priority=-1), dist="dist-one")
        plugin_dist(site, "twin", PLUGIN_BACKEND.format(name="twinb", priority=-1), dist="dist-two", module="twin2_plugin")
        out = accel(["info", "--json"], d, {"PYTHONPATH": str(site)})
        v.judge(out, (0,), "accel info with two distributions of one entry-point name")
        report = _valid_json(v, out, "accel info --json")
        plugins = report.get("plugins", []) if isinstance(report, dict) else []
        if not any("is also offered by" in p.get("error", "") for p in plugins):
            v.add("traceback", "the dropped duplicate entry point is not reported")

    def raising_rule(d: Path, v: Verdict) -> None:
        source = (
            "from accel_abstraction import hookimpl\nfrom accel_abstraction.porting.rules import Rule\n"
            "def boom(node, scan):\n    raise SystemExit('rule bug')\n"
            "@hookimpl\ndef accel_scan_rules(register):\n    register(Rule('BAD001', 'manual', 'buggy', matcher=boom))\n"
        )
        env = {"PYTHONPATH": str(plugin_dist(d / "site", "buggy", source))}
        (d / "a.py").write_text(coupled)
        (d / "b.py").write_text(coupled)
        out = accel(["scan", "a.py", "b.py"], d, env)
        v.judge(out, (1,), "accel scan with a raising plugin rule")
        if out.stdout.count("ACC111") != 2:
            v.add("traceback", f"the scan did not go on: {out.stdout[:200]!r}")
        if len([line for line in out.stderr.splitlines() if "rule BAD001 of plugin 'buggy'" in line]) != 2:
            v.add("traceback", f"wanted one line per file naming plugin and rule: {out.stderr[-300:]!r}")
        out = accel(["port", "--write", "a.py"], d, env)
        v.judge(out, (1,), "accel port with a raising plugin rule")
        v.one_error_line(out, "port with a raising rule", "rule BAD001 of plugin 'buggy'")

    def broken_command(d: Path, v: Verdict) -> None:
        source = (
            "from accel_abstraction import hookimpl\nfrom accel_abstraction.commands import CommandSpec\n"
            "@hookimpl\ndef accel_register_commands(register):\n    register(CommandSpec('profile', 'x', 'no_such_mod_xyz'))\n"
        )
        env = {"PYTHONPATH": str(plugin_dist(d / "site", "cmds", source))}
        out = accel(["profile", "--now"], d, env)
        v.judge(out, (2,), "a broken plugin command")
        v.one_error_line(out, "a broken plugin command", "is broken")
        v.judge(accel(["info", "--json"], d, env), (0,), "accel info next to a broken plugin command")

    def slow_import(d: Path, v: Verdict) -> None:
        env = {"PYTHONPATH": str(plugin_dist(d / "site", "sleepy", "import time\ntime.sleep(3600)\n")), "ACCEL_PLUGIN_IMPORT_TIMEOUT": "2"}
        (d / "a.py").write_text(coupled)
        out = accel(["scan", "a.py"], d, env, timeout=30)
        v.judge(out, (0,), "accel scan next to a plugin that sleeps at import")
        if "'sleepy'" not in out.stderr or "took longer than 2 s" not in out.stderr:
            v.add("traceback", f"the slow plugin is not named: {out.stderr[-300:]!r}")

    yield Try("plugin:chatty-json-outputs", "plugin", chatty)
    yield Try("plugin:cpu-name-clash", "plugin", cpu_clash)
    yield Try("plugin:duplicate-entry-point", "plugin", twin)
    yield Try("plugin:raising-scan-rule", "plugin", raising_rule)
    yield Try("plugin:broken-command", "plugin", broken_command)
    yield Try("plugin:slow-import", "plugin", slow_import)


# ----------------------------------------------------------------------------- sources (issue 38)


def _source_tries(world: World) -> Iterator[Try]:
    for name, newline in (("cr-only", "\r"), ("mixed", "mixed")):

        def endings(d: Path, v: Verdict, newline: str = newline) -> None:
            lf = port_tree(d / "lf")
            other = d / "other"
            other.mkdir()
            for path in lf.glob("*.py"):
                lines = path.read_text().splitlines(keepends=True)
                ends = ["\r"] * len(lines) if newline == "\r" else ["\r", "\r\n", "\n"] * len(lines)
                (other / path.name).write_bytes("".join(ln.replace("\n", e) for ln, e in zip(lines, ends, strict=False)).encode())
            want = accel(["scan", "lf"], d)
            got = accel(["scan", "other"], d)
            v.judge(got, (0,), f"accel scan of {newline!r} files")
            if got.stdout.replace("other/", "lf/") != want.stdout or not want.stdout:
                v.add("lost", f"{newline!r} files scan differently from LF: {got.stdout[:160]!r}")
            out = accel(["port", "--write", "other"], d)
            v.judge(out, (0,), f"accel port --write of {newline!r} files")
            for path in other.glob("*.py"):
                data = path.read_bytes()
                if data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") != world.ported()[path.name]:
                    v.add("lost", f"{path.name}: not ported like its LF twin")

        yield Try(f"source:endings-{name}", "source", endings)

    notebooks = {
        "source-ints": json.dumps({"cells": [{"cell_type": "code", "source": [1, 2]}]}),
        "deep": '{"cells": ' + "[" * 100000 + "]" * 100000 + "}",
    }
    for shape, text in notebooks.items():

        def notebook(d: Path, v: Verdict, text: str = text) -> None:
            tree = port_tree(d / "src")
            (tree / "bad.ipynb").write_text(text)
            out = accel(["scan", str(tree)], d)
            v.judge(out, (1,), "accel scan over a malformed notebook")
            v.one_error_line(out, "a malformed notebook", "bad.ipynb")
            if out.stdout.count("ACC") < len(PORT_FILES):
                v.add("lost", "the good files next to the notebook were not reported")

        yield Try(f"source:notebook-{shape}", "source", notebook)

    def saved_during_port(d: Path, v: Verdict) -> None:
        tree = port_tree(d / "src")
        edit = PORT_FILES["m1.py"] + "y = 'saved by the user during the port'\n"
        saver = (
            "from pathlib import Path\nfrom accel_abstraction import hookimpl\n"
            "from accel_abstraction.porting.rules import Rule\ndone = []\n"
            "def save(node, scan):\n"
            f"    if not done and scan.path.endswith('m1.py'):\n        done.append(1)\n"
            f"        Path(scan.path).write_text({edit!r})\n"
            "@hookimpl\ndef accel_scan_rules(register):\n    register(Rule('SAVE001', 'manual', 'saves', matcher=save))\n"
        )
        env = {"PYTHONPATH": str(plugin_dist(d / "site", "saver", saver))}
        out = accel(["port", "--write", str(tree)], d, env)
        v.judge(out, (1,), "accel port --write while a file is saved")
        v.one_error_line(out, "a file saved during the port", "changed after it was read")
        if (tree / "m1.py").read_text() != edit:
            v.add("lost", "the user's saved edit was overwritten by the port")

    def sigterm(d: Path, v: Verdict) -> None:
        from accel_abstraction.testing.interrupt import interrupt_when_started

        tree = d / "src"
        tree.mkdir()
        for i in range(300):
            (tree / f"n{i:03d}.py").write_text(PORT_FILES["m0.py"])
        full = {k: val for k, val in os.environ.items() if not k.startswith("ACCEL_")}
        stop = interrupt_when_started(
            [sys.executable, "-m", "accel_abstraction", "port", "--write", str(tree)],
            lambda: any("torch.cuda" not in p.read_text() for p in tree.glob("*.py")),
            cwd=d, env=full, wait_s=TIMEOUT_S, grace_s=20,
        )  # fmt: skip
        if stop.hung:
            v.add("hang", "accel port --write did not stop within 20 s of SIGTERM")
            return
        if TRACEBACK in stop.stderr or "stopped by SIGTERM" not in stop.stderr:
            v.add("traceback", f"SIGTERM: {stop.stderr[-300:]!r}")
        again = accel(["port", "--write", str(tree)], d)
        v.judge(again, (0,), "accel port --write after SIGTERM")
        if any(p.read_bytes() != world.ported()["m0.py"] for p in tree.glob("*.py")) or debris(tree):
            v.add("lost", f"the rerun did not finish the port (debris {debris(tree)[:3]})")

    yield Try("source:saved-during-port", "source", saved_during_port)
    yield Try("source:sigterm-port-300", "source", sigterm)


# ----------------------------------------------------------------------------- config (issue 38)


def _config_tries() -> Iterator[Try]:
    shapes = {
        "device-index-true": (b'[tool.accel]\nbackend = "cpu"\ndevice_index = true\n', {}, "device_index"),
        "deep-array": (b"[tool.accel]\nbackend = " + b"[" * 50000 + b"]" * 50000 + b"\n", {}, "too deeply"),
        "scan-ignore-truncated": (b"[project]\nname = 'x'\n", {"ACCEL_SCAN_IGNORE": '["ACC104"'}, "ACCEL_SCAN_IGNORE"),
        "scan-ignore-deep": (b"[project]\nname = 'x'\n", {"ACCEL_SCAN_IGNORE": "[" * 30000 + "]" * 30000}, "ACCEL_SCAN_IGNORE"),
    }
    for shape, (text, env, needle) in shapes.items():

        def bad(
            d: Path, v: Verdict, text: bytes = text, env: dict[str, str] = env, needle: str = needle, shape: str = shape
        ) -> None:
            (d / "pyproject.toml").write_bytes(text)
            (d / "a.py").write_text("import torch\n")
            # scan: no torch, so the neuron plugin's torch autoload does not warn about the file first
            command = ["run", "--report", "none", "a.py"] if needle == "device_index" else ["scan", "a.py"]
            out = accel(command, d, env)
            v.judge(out, (2,), f"accel {command[0]} with {shape}")
            v.one_error_line(out, shape, needle)

        yield Try(f"config:{shape}", "config", bad)

    def bom(d: Path, v: Verdict) -> None:
        (d / "pyproject.toml").write_bytes(b'\xef\xbb\xbf[tool.accel]\nbackend = "cpu"\n')
        out = accel(["info", "--json"], d)
        v.judge(out, (0,), "accel info with a BOM in pyproject.toml")
        report = _valid_json(v, out, "accel info --json")
        selected = report.get("selected") if isinstance(report, dict) else None
        if not selected or "pyproject.toml" not in str(selected.get("source")):
            v.add("traceback", f"the BOM file's backend was not used: {selected!r}")

    yield Try("config:utf8-bom", "config", bom)


# ----------------------------------------------------------------------------- accel run (issue 38)


def _run_tries() -> Iterator[Try]:
    late = {
        "atexit": "atexit.register(lambda: print('late', torch.zeros(1).cuda().device))\n",
        "finalize": "class B:\n    pass\nb = B()\nweakref.finalize(b, lambda: print('late', torch.zeros(1).cuda().device))\n",
        # the thread yields between calls: one busy in torch while the interpreter finalizes can
        # abort in torch's C++ ("terminate called without an active exception"), accel or not
        "daemon": "def spin():\n    while True:\n        torch.zeros(1).cuda()\n        time.sleep(0.001)\n"
        "threading.Thread(target=spin, daemon=True).start()\ntime.sleep(0.3)\nprint('late cpu')\n",
    }
    for shape, body in late.items():

        def after_last_line(d: Path, v: Verdict, body: str = body) -> None:
            (d / "train.py").write_text("import atexit, threading, time, weakref\nimport torch\n" + body)
            out = accel(["run", "--report", "none", "train.py"], d, {"ACCEL_BACKEND": "cpu"})
            v.judge(out, (0,), "CUDA after the script's last line under accel run")
            if "late cpu" not in out.stdout or "not compiled" in out.stderr:
                v.add("traceback", f"the redirect was undone too early: {out.stderr[-300:]!r}")

        yield Try(f"run:{shape}-redirected", "run", after_last_line)

    def failing_exit_handler(d: Path, v: Verdict) -> None:
        (d / "train.py").write_text("import atexit, torch\ndef bad():\n    torch.zeros(1).cuda()\n    raise RuntimeError('late')\natexit.register(bad)\n")
        out = accel(["run", "--report", "none", "train.py"], d, {"ACCEL_BACKEND": "cpu"})
        v.judge(out, (1,), "a failing atexit handler under accel run")
        if "accel run: exit handler" not in out.stderr:
            v.add("traceback", f"the failing exit handler is not named: {out.stderr[-300:]!r}")

    def other_users_folder(d: Path, v: Verdict) -> None:
        temp = d / "tmp"
        temp.mkdir()
        dead = run(["-c", "import os; print(os.getpid())"], d).stdout.strip()
        theirs = temp / f"accel-run-{dead}-theirs"
        theirs.mkdir()
        (theirs / "1.json").write_text("[]")
        (d / "train.py").write_text("")
        out = accel(["run", "--report", "none", "train.py"], d, {"ACCEL_BACKEND": "cpu", "TMPDIR": str(temp)})
        v.judge(out, (0,), "accel run next to an unmarked accel-run-* folder")
        if not (theirs / "1.json").is_file():
            v.add("outside", "accel run deleted a folder it did not make")

    def overlay_missing_script(d: Path, v: Verdict) -> None:
        out = run(["-m", "accel_abstraction.patching.run", "--overlay", str(d), "nope.py"], d)
        v.judge(out, (2,), "patching.run with a missing script")
        v.one_error_line(out, "patching.run with a missing script", "nope.py")

    yield Try("run:failing-exit-handler", "run", failing_exit_handler)
    yield Try("run:other-users-temp-folder", "run", other_users_folder)
    yield Try("run:overlay-missing-script", "run", overlay_missing_script)


# ----------------------------------------------------------------------------- metrics (issue 38)


def _metrics_tries() -> Iterator[Try]:
    lines = {
        "deep-json": "'{\"step\": ' + '[' * 100000 + ']' * 100000 + '}'",
        "infinity-step": "'{\"step\": Infinity, \"loss\": 1}'",
        "x-step": "'{\"step\": \"x\", \"loss\": 1}'",
        "huge-int": "'{\"step\": 0, \"loss\": ' + '9' * 400 + '}'",
    }
    for shape, line in lines.items():

        def bad_line(d: Path, v: Verdict, line: str = line) -> None:
            (d / "train.py").write_text(
                "import os\nopen(os.environ['ACCEL_METRICS_FILE'], 'a').write(" + line + " + '\\n')\n"
            )
            out = accel(["parity", "train.py", "--backends", "cpu", "--no-progress", "--no-plot"], d)
            v.judge(out, (1, 2), "accel parity on a hostile metrics line")

        yield Try(f"metrics:{shape}", "metrics", bad_line)

    def replaced_by_folder(d: Path, v: Verdict) -> None:
        (d / "train.py").write_text(
            "import os\nimport accel_abstraction as accel\naccel.log_metric(step=0, loss=1.0)\n"
            "p = os.environ['ACCEL_METRICS_FILE']\nos.remove(p)\nos.mkdir(p)\n"
        )
        out = accel(["parity", "train.py", "--backends", "cpu", "--no-progress", "--no-plot"], d)
        v.judge(out, (1, 2), "accel parity whose metrics file became a folder")

    def huge_log_metric(d: Path, v: Verdict) -> None:
        (d / "train.py").write_text("import accel_abstraction as accel\naccel.log_metric(step=0, loss=10**400)\n")
        out = accel(["parity", "train.py", "--backends", "cpu", "--no-progress", "--no-plot"], d)
        v.judge(out, (1, 2), "accel parity of log_metric(loss=10**400)")

    for where in ("/dev/full", "folder"):

        def unwritable(d: Path, v: Verdict, where: str = where) -> None:
            target = where if where == "/dev/full" else str(d)
            (d / "train.py").write_text("import accel_abstraction as accel\naccel.log_metric(step=0, loss=1.0)\n")
            out = accel(["run", "--report", "none", "train.py"], d, {"ACCEL_BACKEND": "cpu", "ACCEL_METRICS_FILE": target})
            v.judge(out, (2,), f"log_metric with ACCEL_METRICS_FILE={where}")
            v.one_error_line(out, f"ACCEL_METRICS_FILE={where}", "ACCEL_METRICS_FILE")

        yield Try(f"metrics:log-metric-{where.strip('/').replace('/', '-')}", "metrics", unwritable)
    yield Try("metrics:replaced-by-folder", "metrics", replaced_by_folder)
    yield Try("metrics:log-metric-huge-int", "metrics", huge_log_metric)


# ----------------------------------------------------------------------------- driver


def all_tries(world: World, points: int, fast: bool = False, faults_too: bool = True) -> list[Try]:
    """Every try (``faults_too=False``: not the kill and enospc classes, whose counting runs
    each writing command once)."""
    faults = [*fault_tries(world, points, "kill", fast), *fault_tries(world, points, "enospc", fast)] if faults_too else []
    issue38 = [*_plugin_tries(), *_source_tries(world), *_config_tries(), *_run_tries(), *_metrics_tries()]
    return [*faults, *crafted_tries(world), *issue38]


def sample(tries: list[Try], n: int, seed: int) -> list[Try]:
    """``n`` tries spread over the classes (round robin over a shuffled list per class)."""
    rng = random.Random(seed)
    by_class: dict[str, list[Try]] = {}
    for t in tries:
        by_class.setdefault(t.cls, []).append(t)
    for group in by_class.values():
        rng.shuffle(group)
    picked: list[Try] = []
    while len(picked) < n and any(by_class.values()):
        for group in by_class.values():
            if group and len(picked) < n:
                picked.append(group.pop())
    return picked


def run_tries(tries: list[Try], base: Path, world: World, verbose: bool = True) -> list[Verdict]:
    verdicts = []
    for i, t in enumerate(tries):
        d = base / f"try-{i:04d}"
        d.mkdir()
        v = Verdict(t.name, t.cls)
        try:
            t.body(d, v)
        except Exception as exc:  # noqa: BLE001 - a broken try is reported, the others still run
            v.add("harness", f"{type(exc).__name__}: {exc}")
        verdicts.append(v)
        if verbose:
            mark = "ok" if not v.problems else "FAIL " + "; ".join(f"{k}: {w[0]}" for k, w in v.problems.items())
            print(f"[{i + 1}/{len(tries)}] {t.name} ({v.seconds:.1f} s) {mark}", flush=True)
    return verdicts


def summary(verdicts: list[Verdict]) -> dict[str, int]:
    kinds = ("traceback", "hang", "lost", "outside", "harness")
    return {
        "tries": len(verdicts),
        **{k: sum(1 for v in verdicts if k in v.problems) for k in kinds},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, help="run this many tries, spread over the classes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--points", type=int, default=25, help="operations faulted per writing command and fault (0: every one)"
    )
    parser.add_argument("--only", help="only tries whose name starts with this")
    parser.add_argument("--fast", action="store_true", help="leave out the slow writers (accel parity --record)")
    parser.add_argument("--list", action="store_true", help="list the tries and exit")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="accel-hostile-"))
    try:
        world = World(base)
        faults_too = not args.only or args.only.startswith(tuple(FAULTS_JUDGED))
        tries = all_tries(world, args.points, args.fast, faults_too)
        if args.only:
            tries = [t for t in tries if t.name.startswith(args.only)]
        if args.sample:
            tries = sample(tries, args.sample, args.seed)
        if args.list:
            print("\n".join(t.name for t in tries))
            return 0
        start = time.perf_counter()
        verdicts = run_tries(tries, base, world)
        counts = summary(verdicts)
        print(json.dumps({**counts, "seconds": round(time.perf_counter() - start, 1)}))
        return 0 if all(counts[k] == 0 for k in counts if k != "tries") else 1
    finally:
        if args.keep:
            print(f"kept {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
