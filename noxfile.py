"""Development and CI sessions: ``nox -l`` lists them, ``nox -s NAME`` runs one.

* ``tests(backend='cpu'|'neuron'|'cuda')``: the test suite with one backend selected
  (``neuron`` runs on the CPU emulation; ``cuda`` is skipped, with the plugin's reason, where
  there is no GPU). Arguments after ``--`` go to pytest: ``nox -s "tests(backend='cpu')" -- -k parity``.
* ``cuda``: the cuda leg where there is an NVIDIA GPU (the cuda plugin's tests, then
  ``accel parity examples/train.py --backends cpu,cuda``); skipped with the reason elsewhere; not in CI.
* ``matrix``: every backend leg in one environment, then one table of passed/failed/skipped.
* ``lint`` (ruff), ``typecheck`` (mypy), ``bench`` (``benchmarks/*.py``), ``patches``.
* ``transformers_tests`` / ``torch_tests``: transformers' model tests / PyTorch's device-generic test
  files from a given tree, on the CPU and the emulated neuron device, compared by test name (not in CI).
* ``torch_newest``: the newest tested torch release (the emulator's ``TESTED_TORCH[-1]``) in its own
  environment, on the parts that touch torch internals, and the main job; ``.ci/run`` runs it.
  ``torch_release -- VERSION``: the whole suite on any release.
* ``notorch-3.10`` ... ``notorch-3.13``: the parts that need no torch (scanner, porter, their settings,
  CLI, packaging) on every supported Python, in an environment without torch, as the pre-commit hook
  installs it. torch 2.13's CPU wheel is on this machine for 3.11 only, so the torch suite runs there.

Environments are plain ``venv`` ones filled by pip from ``requirements-dev.txt`` (which pins
torch). They are reused between runs, and the install is skipped while the requirement and
project files are unchanged (``nox -s NAME --reuse-venv=no`` rebuilds one).

Why one file of ~460 lines: nox reads its sessions from this one file, and the helpers here
(installing the pinned requirements, torch releases, the per-backend legs) serve only them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "typecheck", "matrix"]

ROOT = Path(__file__).parent
REPORTS = ROOT / ".nox" / "reports"
#: The in-tree backends (``plugins/in-tree.txt``, the one list of them).
IN_TREE_PLUGINS = [
    line.strip()
    for line in (ROOT / "plugins" / "in-tree.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
DEPENDENCY_FILES = [
    "requirements-dev.txt",
    "constraints.txt",
    "pyproject.toml",
    "plugins/in-tree.txt",
    *(f"plugins/{name}/pyproject.toml" for name in IN_TREE_PLUGINS),
]

#: Environment of each test leg: only the backend selection differs.
BACKENDS: dict[str, dict[str, str]] = {
    "cpu": {"ACCEL_BACKEND": "cpu", "ACCEL_TEST_BACKENDS": "cpu"},
    "neuron": {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1", "ACCEL_TEST_BACKENDS": "neuron"},
    "cuda": {"ACCEL_BACKEND": "cuda", "ACCEL_TEST_BACKENDS": "cuda"},
}

PROBE = """
import sys
import accel_abstraction.plugins as plugins
from accel_abstraction.selection import build_backend, probe
from accel_abstraction.settings import AccelSettings
name = sys.argv[1]
entry = plugins.get_host().registry.get(name)
avail = probe(build_backend(entry, AccelSettings.load(backend=name)), entry)
print("yes" if avail.available else "no: " + avail.reason)
"""

TABLE = """
import json, sys
from rich.console import Console
from rich.table import Table
rows = json.loads(sys.argv[1])
table = Table(title="Test matrix")
for col, just in [("backend", "left"), ("passed", "right"), ("failed", "right"), ("errors", "right"),
                  ("skipped", "right"), ("time", "right"), ("result", "left")]:
    table.add_column(col, justify=just)
for r in rows:
    if r.get("note"):
        table.add_row(r["backend"], "-", "-", "-", "-", "-", "[yellow]" + r["note"])
        continue
    ok = r["failed"] == 0 and r["errors"] == 0
    table.add_row(r["backend"], str(r["passed"]), str(r["failed"]), str(r["errors"]), str(r["skipped"]),
                  f"{r['time']:.0f} s", "[green]ok" if ok else "[red]failed")
Console(width=100).print(table)
"""


# --------------------------------------------------------------------------- helpers


def _digest() -> str:
    h = hashlib.sha256()
    for name in DEPENDENCY_FILES:
        path = ROOT / name
        h.update(name.encode())
        h.update(path.read_bytes() if path.exists() else b"-")
    return h.hexdigest()


def install_dev(session: nox.Session, alternatives: bool = False) -> None:
    """``pip install -r requirements-dev.txt``, skipped while the dependency files are unchanged.

    ``alternatives``: also the ``bench`` extra (what ``benchmarks/bench_alternatives.py``
    compares against), under the torch pin and without build isolation, so that DeepSpeed's
    source distribution builds against the pinned torch instead of fetching a CUDA build
    into an isolated build environment (``DS_BUILD_OPS=0``: no CUDA ops compiled).
    """
    location = getattr(session.virtualenv, "location", None)
    stamp = Path(location) / (".accel-bench-deps" if alternatives else ".accel-dev-deps") if location else None
    digest = _digest()
    if stamp is not None and stamp.exists() and stamp.read_text() == digest:
        session.log("dependencies unchanged since the last install; skipping pip")
        return
    session.install("-r", "requirements-dev.txt")
    if alternatives:
        session.install("setuptools", "wheel")
        session.install(
            "-c", "constraints.txt", "--no-build-isolation", *_extra("bench"), env={"DS_BUILD_OPS": "0"}
        )
    if stamp is not None:
        stamp.write_text(digest)


def _extra(name: str) -> list[str]:
    """The requirements of the project's optional dependency group ``name`` (pyproject.toml)."""
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][name]


def _no_gpu_reason() -> str | None:
    """Why this machine cannot run the cuda leg before anything is installed, or None if it may."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "no NVIDIA GPU here (nvidia-smi not found)"
    probe = subprocess.run([smi, "-L"], capture_output=True, text=True)
    if probe.returncode != 0 or "GPU" not in probe.stdout:
        return f"no NVIDIA GPU here (nvidia-smi -L: {(probe.stderr or probe.stdout).strip() or 'no devices'})"
    return None


def _unavailable(session: nox.Session, backend: str) -> str | None:
    """The backend plugin's own reason it cannot run in this environment, or None when it can."""
    env = BACKENDS[backend]
    session.log(f"probing whether backend {backend!r} can run here")
    out = session.run("python", "-c", PROBE, backend, env=env, silent=True, log=False)
    answer = (out or "").strip().splitlines()[-1] if out else ""
    return (
        None if answer == "yes" else answer.removeprefix("no: ") or "the availability probe printed nothing"
    )


def _run_leg(session: nox.Session, backend: str, *, check: bool) -> Path:
    REPORTS.mkdir(parents=True, exist_ok=True)
    junit = REPORTS / f"junit-{backend}.xml"
    junit.unlink(missing_ok=True)
    args = session.posargs or []
    session.run(
        "pytest",
        f"--junitxml={junit}",
        "-o",
        f"junit_suite_name=accel-{backend}",
        *args,
        env=BACKENDS[backend],
        success_codes=[0] if check else [0, 1, 5],
    )
    return junit


def _summarise(backend: str, junit: Path) -> dict[str, object]:
    if not junit.exists():
        return {"backend": backend, "note": "no report (pytest did not run)"}
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    return {
        "backend": backend,
        "passed": total["tests"] - total["failures"] - total["errors"] - total["skipped"],
        "failed": total["failures"],
        "errors": total["errors"],
        "skipped": total["skipped"],
        "time": sum(float(s.get("time", 0)) for s in suites),
    }


# --------------------------------------------------------------------------- sessions


@nox.session
@nox.parametrize("backend", list(BACKENDS))
def tests(session: nox.Session, backend: str) -> None:
    """The test suite with one backend selected (cuda: skipped with its reason where there is no GPU)."""
    if backend == "cuda" and (reason := _no_gpu_reason()):
        session.skip(f"cuda: {reason}")
    install_dev(session)
    if reason := _unavailable(session, backend):
        session.skip(f"{backend}: {reason}")
    _run_leg(session, backend, check=True)


@nox.session
def cuda(session: nox.Session) -> None:
    """The cuda leg on a machine with an NVIDIA GPU (not in CI): the cuda plugin's tests with real
    CUDA, then the main job compared between cpu and cuda. Skips, saying why, without a GPU or
    without a CUDA build of torch (install one in ``.nox/cuda`` first; see docs/testing.md)."""
    if reason := _no_gpu_reason():
        session.skip(f"cuda: {reason}")
    install_dev(session)
    if reason := _unavailable(session, "cuda"):
        session.skip(f"cuda: {reason}")
    session.run("pytest", "-q", "plugins/cuda/tests", *session.posargs, env=BACKENDS["cuda"])
    session.run("accel", "parity", "examples/train.py", "--backends", "cpu,cuda")


@nox.session
def matrix(session: nox.Session) -> None:
    """Every backend leg in one environment, then one summary table (from the junit reports)."""
    install_dev(session)
    rows: list[dict[str, object]] = []
    for backend in BACKENDS:
        reason = _no_gpu_reason() if backend == "cuda" else None
        reason = reason or _unavailable(session, backend)
        if reason:
            session.log(f"{backend}: skipped: {reason}")
            rows.append({"backend": backend, "note": f"skipped: {reason}"})
            continue
        rows.append(_summarise(backend, _run_leg(session, backend, check=False)))
    session.run("python", "-c", TABLE, json.dumps(rows), log=False)
    failed = [r["backend"] for r in rows if not r.get("note") and (r["failed"] or r["errors"])]
    if failed:
        session.error(f"tests failed on: {', '.join(map(str, failed))}")


#: The file holding the emulator's list of tested torch releases (``TESTED_TORCH``), read, not imported.
TESTED_TORCH_SOURCE = ROOT / "plugins" / "neuron" / "accel_neuron" / "emulator" / "compat.py"

#: What ``torch_newest`` runs on the newest tested release: the parts that touch torch internals
#: (the emulated device's conformance suites and real models, the patch series). The rest of the
#: suite runs on the pinned torch in every CI run; ``nox -s torch_release -- VERSION`` runs it all.
NEWEST_TESTS = [
    "plugins/neuron/tests/test_opinfo_conformance.py",
    "plugins/neuron/tests/test_moduleinfo_conformance.py",
    "plugins/neuron/tests/test_real_models.py",
    "plugins/neuron/tests/test_emulator_install.py",
    "plugins/neuron/tests/test_tied_parameters.py",
    "tests/patches",
]


def _tested_torch() -> list[str]:
    """``TESTED_TORCH`` from the emulator's source (nox runs outside the environments that hold it)."""
    import ast

    for node in ast.parse(TESTED_TORCH_SOURCE.read_text()).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "TESTED_TORCH":
            return list(ast.literal_eval(node.value))
    raise RuntimeError(f"no TESTED_TORCH = (...) in {TESTED_TORCH_SOURCE}")


#: Where the wheels of each torch release installed by ``torch_release``/``torch_newest`` are kept
#: (``$ACCEL_WHEEL_CACHE``, default ``~/.cache/accel-abstraction/wheels``). pip's own HTTP cache
#: does not keep them on the project's machines (the registry's responses are not cacheable there),
#: so they are downloaded once into ``<cache>/torch-<release>/`` and installed from there after.
WHEEL_CACHE = Path(os.environ.get("ACCEL_WHEEL_CACHE") or Path.home() / ".cache" / "accel-abstraction" / "wheels")

#: pip's environment for installs that must not see this machine's global constraint (it caps
#: torch): an empty ``PIP_CONSTRAINT`` does not override a configuration file, ``/dev/null`` does.
NO_GLOBAL_CONSTRAINT = {"PIP_CONSTRAINT": "/dev/null"}


def _torch_wheels(session: nox.Session, version: str) -> Path:
    """``<WHEEL_CACHE>/torch-<version>``: torch and its dependencies' wheels, downloaded once."""
    wheels = WHEEL_CACHE / f"torch-{version}"
    if (wheels / ".complete").exists():
        session.log(f"torch {version} wheels from {wheels}")
        return wheels
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".torch-{version}.", dir=WHEEL_CACHE))
    try:
        session.run(
            "python", "-m", "pip", "download", "-q", "-d", str(partial), f"torch=={version}",
            env=NO_GLOBAL_CONSTRAINT,
        )  # fmt: skip
        (partial / ".complete").write_text(version)
        shutil.rmtree(wheels, ignore_errors=True)
        os.replace(partial, wheels)  # whole or absent: an interrupted download is never used
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return wheels


def install_torch_release(session: nox.Session, version: str) -> None:
    """``torch==version`` and the project (editable, with every plugin), under the project's other pins.

    torch comes from :data:`WHEEL_CACHE` (downloaded there the first time); the rest under
    ``constraints.txt`` with its torch pin replaced by ``version``. Skipped while the
    release, the dependency files and the checkout's location are unchanged.
    """
    location = getattr(session.virtualenv, "location", None)
    stamp = Path(location) / ".accel-torch-release" if location else None
    digest = f"{version}:{ROOT}:{_digest()}"
    if stamp is not None and stamp.exists() and stamp.read_text() == digest:
        session.log(f"torch {version} and the project are installed and unchanged; skipping pip")
        return
    wheels = _torch_wheels(session, version)
    session.install("--no-index", "--find-links", str(wheels), f"torch=={version}", env=NO_GLOBAL_CONSTRAINT)
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if not line.startswith("torch==")]
    constraints = Path(session.create_tmp()) / f"constraints-torch-{version}.txt"
    constraints.write_text("\n".join([*pins, f"torch=={version}", ""]))
    session.install(
        "-c", str(constraints), "--find-links", str(wheels),
        "-e", ".[dev]", *(arg for name in IN_TREE_PLUGINS for arg in ("-e", f"plugins/{name}")),
        env=NO_GLOBAL_CONSTRAINT,
    )  # fmt: skip
    if stamp is not None:
        stamp.write_text(digest)


@nox.session
def torch_release(session: nox.Session) -> None:
    """The whole suite against another torch release: ``nox -s torch_release -- 2.14.1 [pytest args]``.

    Installs ``torch==VERSION`` (from the index: a multi-GB CUDA build on Linux) instead of the pin,
    then the project, and runs the tests. A release outside the emulator's ``TESTED_TORCH`` runs
    when its capability probes pass, with one ``UntestedTorchWarning``.
    """
    if not session.posargs:
        session.error("name the torch release: nox -s torch_release -- 2.14.1 [pytest args]")
    version, *pytest_args = session.posargs
    install_torch_release(session, version)
    session.run("python", "-c", "import torch; print('torch', torch.__version__)")
    session.run("python", "-m", "pytest", "-q", *pytest_args)


@nox.session
def torch_newest(session: nox.Session) -> None:
    """The newest tested torch release (``TESTED_TORCH[-1]``) on the parts that touch torch internals.

    In its own environment: the patch series for that release (``accel patches check`` and
    ``tests/patches``), the emulated device's op_db/module_db conformance suites, its
    real-model suite and install probes, and the main job (``accel parity examples/train.py
    --backends cpu,neuron``, bitwise). ``.ci/run`` runs it; arguments after ``--`` go to pytest.
    """
    version = _tested_torch()[-1]
    install_torch_release(session, version)
    session.run("python", "-c", f"import torch; assert torch.__version__.split('+')[0] == {version!r}, torch.__version__")
    session.run("accel", "patches", "check")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *NEWEST_TESTS, *session.posargs)
    session.run(
        "accel", "parity", "examples/train.py", "--backends", "cpu,neuron", "--out", "parity-out/torch-newest"
    )


#: Interpreters the project supports (``requires-python``); each leg is skipped when not installed.
SUPPORTED_PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
#: Test paths that must pass without torch (tests needing torch there call ``pytest.importorskip``).
TORCH_FREE_TESTS = ["tests/porting", "tests/test_packaging.py", "tests/hostile/test_safe_io.py"]


@nox.session(python=SUPPORTED_PYTHONS)
def notorch(session: nox.Session) -> None:
    """Scanner, porter, CLI and packaging on one Python, with torch absent (as `pip install .[port]` gives)."""
    session.install("-e", ".[port]", "pytest>=8", "hypothesis>=6.100", "setuptools>=68", "wheel")
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)"
    session.run("python", "-c", probe, silent=True)  # fails the leg if torch slipped in
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *TORCH_FREE_TESTS, *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the project (the rules in pyproject.toml); needs only ruff, so it is quick."""
    session.install("-c", "constraints.txt", "ruff")
    session.run("ruff", "check", *(session.posargs or ["."]))


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy on the accel_abstraction package."""
    install_dev(session)
    session.run("mypy", "accel_abstraction", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Run every benchmarks/bench_*.py into benchmarks/results.json, then regenerate the README table.

    Each benchmark takes under a minute by default (``--budget``); ``nox -s bench -- --threads 2``
    passes arguments to all of them. The environment also holds the alternatives compared by
    ``bench_alternatives.py`` (the ``bench`` extra: DeepSpeed, accelerate, Lightning).
    """
    # the ratio benchmarks (built on benchmarks/harness.py); bench_realcode.py scores recall instead
    scripts = [p for p in sorted((ROOT / "benchmarks").glob("bench_*.py")) if "add_common_args" in p.read_text()]
    install_dev(session, alternatives=True)
    results = ROOT / "benchmarks" / "results.json"
    results.unlink(missing_ok=True)
    for script in scripts:
        session.run("python", str(script.relative_to(ROOT)), "--json", str(results), *session.posargs)
    session.run("python", "benchmarks/readme_table.py")


@nox.session
def transformers_tests(session: nox.Session) -> None:
    """transformers' own model tests on the CPU and on the emulated neuron device, side by side (not in CI).

    ``nox -s transformers_tests -- TREE [FILE ...] [--pytest-args "..."]``: ``TREE`` is a
    huggingface/transformers checkout of a release tag (third-party: never committed; without
    one the session says how to get it). The session installs that release of transformers
    (the tests use its private helpers) and the packages its tests import, under the project's
    other pins. See docs/ci.md.
    """
    install_dev(session)
    script = "plugins/neuron/tests/scripts/transformers_suite.py"
    if session.posargs and not session.posargs[0].startswith("-"):
        wanted = session.run("python", script, session.posargs[0], "--requirements", silent=True, success_codes=[0, 2])
        if isinstance(wanted, str) and wanted.startswith("transformers=="):
            pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines()
                    if not line.startswith("transformers==")]  # fmt: skip
            constraints = Path(session.create_tmp()) / "constraints-transformers-tests.txt"
            constraints.write_text("\n".join([*pins, ""]))
            session.install("-c", str(constraints), *wanted.split())
    session.run("python", script, *session.posargs)


@nox.session
def torch_tests(session: nox.Session) -> None:
    """PyTorch's own device-generic test files on the CPU and on the emulated neuron device (not in CI).

    ``nox -s torch_tests -- TREE [FILE ...] [--pytest-args "..."] [--json OUT] [--stock] [--strict]``: ``TREE`` is
    a PyTorch test tree of the pinned release (third-party: never committed; without one the
    session says how to get it: ``plugins/neuron/tests/scripts/torch_tests_tree.py``). The patch
    series for the pinned torch is applied first (wheel patches as an overlay, patches to PyTorch's
    test files to the tree). See docs/ci.md.
    """
    install_dev(session)
    session.run("python", "plugins/neuron/tests/scripts/torch_suite.py", *session.posargs)


@nox.session
def patches(session: nox.Session) -> None:
    """The torch patch series still applies (``accel patches check``) and behaves (tests/patches)."""
    install_dev(session)
    session.run("accel", "patches", "check")
    session.run("pytest", "tests/patches", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Regenerate the rule and CUDA API tables of docs/porting.md from the porting mapping table."""
    install_dev(session)
    session.run("python", "-m", "accel_abstraction.porting.docs", *session.posargs)
    session.run("python", "-m", "accel_abstraction.redirect.docs", *session.posargs)
