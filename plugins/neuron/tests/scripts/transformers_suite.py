"""Run transformers' own model test files on the CPU and on the emulated neuron device, side by side.

Run (``nox -s transformers_tests -- TREE [FILE ...]`` does it in the dev environment)::

    python plugins/neuron/tests/scripts/transformers_suite.py TREE [FILE ...]

``TREE`` is a checkout of huggingface/transformers at the installed version (its ``tests/``
folder with ``tests/models/...`` and ``tests/causal_lm_tester.py``; third-party code: keep it
outside the repository or in the git-ignored ``.cache/``). ``FILE`` paths are relative to
``TREE`` (default: a decoder, an encoder, an encoder-decoder and a mixture-of-experts model).
Each file runs once per device in a fresh pytest (``RUN_SLOW`` unset: nothing is downloaded),
with junit XML written to ``TREE/.accel-transformers/``; the table shows passed / failed /
skipped / errors and the wall time per device, then every test that passes on the CPU and
fails on neuron, with the first line of its message, split into the tests that look the
device up in a per-device table of transformers' tests without a ``neuron`` row
(``UPSTREAM_TABLE_TESTS``, see patches/transformers/) and all others (bugs to fix). ``--pytest-args``
passes options to every run (``"-k sdpa --timeout 300"``); ``--json`` writes the counts,
times and failures. The installed transformers must be the tree's release (the tests use its
private helpers): the script says so when they differ.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

DEFAULT_FILES = (
    "tests/models/gpt2/test_modeling_gpt2.py",
    "tests/models/bert/test_modeling_bert.py",
    "tests/models/t5/test_modeling_t5.py",
    "tests/models/mixtral/test_modeling_mixtral.py",
)
SPEC_NAME = "accel_neuron_device_spec.py"
HOW_TO_GET = (
    "transformers' model tests are not in its wheel, and its PyPI sdist holds only the top-level tests/*.py. "
    "Get the test tree of a release tag (a sparse checkout, see docs/ci.md):\n"
    "  python plugins/neuron/tests/scripts/transformers_tests_tree.py\n"
    "then: nox -s transformers_tests -- .cache/transformers-<tag>"
)
DEVICES = {
    "cpu": {"ACCEL_BACKEND": "cpu"},
    "neuron": {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1",
               "TRANSFORMERS_TEST_DEVICE": "neuron", "TRANSFORMERS_TEST_DEVICE_SPEC": SPEC_NAME},
}  # fmt: skip
#: What transformers' model tests import beyond transformers itself (its ``testing`` extra holds far more:
#: these are the ones the test files of DEFAULT_FILES and their mixins need; ``pytest-timeout`` for ``--timeout``).
TEST_REQUIREMENTS = (
    "parameterized", "pytest-xdist", "pytest-timeout", "pytest-order", "pytest-rerunfailures",
    "timeout-decorator", "datasets",
)  # fmt: skip
#: Tests that look the device type up in a table of transformers' own that has no row for ``neuron``
#: (patches/transformers/ proposes the upstream change; measured to pass with it applied):
#: ``_test_eager_matches_sdpa_inference``'s tolerances (an unlisted device gets 1e-7 / 1e-4 at any
#: dtype) and the FSDP mixin's collective library (an unlisted device gets gloo, which has no
#: backend for its tensors).
UPSTREAM_TABLE_TESTS = re.compile(r"test_eager_matches_sdpa_inference|test_fsdp2_")


_SUMMARY = re.compile(r"^=+ (.*\b(?:passed|failed|skipped|error|errors|deselected)\b.*) in [0-9.]+s", re.M)


def pytest_counts(log: Path) -> dict[str, int] | None:
    """passed / failed / skipped / error from pytest's closing summary line in ``log`` (the junit file has
    one ``testcase`` per test id, and tests with subtests or skipped parametrizations count otherwise)."""
    found = _SUMMARY.findall(log.read_text(errors="replace")) if log.is_file() else []
    if not found:
        return None
    counts = dict.fromkeys(("passed", "failed", "skipped", "error"), 0)
    for number, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", found[-1]):
        counts["error" if word.startswith("error") else word] += int(number)
    return counts


Row = tuple[str, str, dict[str, int], float]  # file, device, counts, wall seconds


def leg_row(test_file: str, device: str, log: Path, outcomes: dict[str, tuple[str, str]], seconds: float) -> Row:
    """One leg's row: pytest's own counts from ``log``, or, where it printed none (killed), the junit outcomes'."""
    counts = pytest_counts(log) or {
        k: sum(1 for o, _ in outcomes.values() if o == k) for k in ("passed", "failed", "skipped", "error")
    }
    return test_file, device, counts, seconds


def print_rows(rows: list[Row], width: int) -> None:
    """The per-file, per-device table both suite runners print (``width``: the file column's)."""
    print(f"{'file':{width}} {'device':7} {'passed':>7} {'failed':>7} {'skipped':>8} {'errors':>7} {'time':>8}")
    for test_file, device, c, seconds in rows:
        print(f"{test_file:{width}} {device:7} {c['passed']:7} {c['failed']:7} {c['skipped']:8} {c['error']:7} {seconds:7.0f}s")


def tree_version(tree: Path) -> str | None:
    """The ``__version__`` of the transformers source in ``tree`` (``src/transformers/__init__.py``)."""
    init = tree / "src" / "transformers" / "__init__.py"
    found = re.search(r'^__version__ = "([^"]+)"', init.read_text(), re.M) if init.is_file() else None
    return found.group(1) if found else None


def installed_version() -> str | None:
    """The version of the transformers that ``python -m pytest`` will import (``PYTHONPATH`` included)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import transformers; print(transformers.__version__)"],
        capture_output=True, text=True, env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    return (probe.stdout.strip() or None) if probe.returncode == 0 else None


def case_outcome(case: ET.Element) -> tuple[str, str]:
    """(outcome, first line of the message) of one junit ``testcase``: passed, failed, error or skipped."""
    for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        node = case.find(tag)
        if node is not None:
            message = node.get("message") or ""
            return outcome, message.splitlines()[0][:160] if message else ""
    return "passed", ""


def _outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, first line of the message) from a junit XML file."""
    if not junit.exists():
        return {}
    return {f"{case.get('classname')}::{case.get('name')}": case_outcome(case)
            for case in ET.parse(junit).getroot().iter("testcase")}  # fmt: skip


def run(tree: Path, files: list[str], timeout: float, pytest_args: list[str], report: Path | None) -> int:
    spec = Path(__file__).resolve().parents[2] / "accel_neuron" / "transformers_device_spec.py"
    shutil.copyfile(spec, tree / SPEC_NAME)  # imported by file name from the working directory
    results = tree / ".accel-transformers"
    results.mkdir(exist_ok=True)
    rows, neuron_only = [], []
    for test_file in files:
        per_device = {}
        for device, env in DEVICES.items():
            junit = results / f"{Path(test_file).stem}-{device}.xml"
            full = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_", "TRANSFORMERS_TEST_", "RUN_SLOW"))}
            full.update(env, OMP_NUM_THREADS=full.get("OMP_NUM_THREADS", "1"), HF_HUB_OFFLINE="1")
            junit.unlink(missing_ok=True)  # a run that is killed must not leave the last run's results
            start = time.perf_counter()
            with open(junit.with_suffix(".log"), "wb") as log:  # pytest's own output, for the failures
                subprocess.run(
                    [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", str(junit),
                     *pytest_args, test_file],
                    cwd=tree, env=full, timeout=timeout, stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
            per_device[device] = (_outcomes(junit), time.perf_counter() - start)
        cpu, neuron = per_device["cpu"][0], per_device["neuron"][0]
        for tid, (outcome, _) in cpu.items():
            got = neuron.get(tid, ("missing", ""))
            if outcome == "passed" and got[0] in ("failed", "error", "missing"):
                neuron_only.append((test_file, tid, got[1]))
        for device, (outcomes, seconds) in per_device.items():
            rows.append(leg_row(test_file, device, results / f"{Path(test_file).stem}-{device}.log", outcomes, seconds))
    print_rows(rows, 48)
    table = [row for row in neuron_only if UPSTREAM_TABLE_TESTS.search(row[1])]
    others = [row for row in neuron_only if row not in table]
    print(f"\n{len(others)} test(s) pass on the CPU and fail on neuron:")
    for test_file, tid, message in others:
        print(f"  {test_file} {tid}: {message}")
    print(f"\n{len(table)} more where a per-device table of transformers' tests has no row for the device "
          "(patches/transformers/):")
    for test_file, tid, message in table:
        print(f"  {test_file} {tid}: {message}")
    if report is not None:
        data = {
            "rows": [{"file": f, "device": d, **c, "seconds": round(t, 1)} for f, d, c, t in rows],
            "neuron_only": [{"file": f, "test": t, "message": m} for f, t, m in others],
            "upstream_table": [{"file": f, "test": t, "message": m} for f, t, m in table],
        }
        tmp = report.with_name(report.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(report)
    return 1 if others else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", nargs="?", type=Path, help="a huggingface/transformers checkout (with tests/)")
    parser.add_argument("files", nargs="*", default=list(DEFAULT_FILES))
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per file and device")
    parser.add_argument("--pytest-args", default="", help="options for every pytest run, one string")
    parser.add_argument("--json", type=Path, help="also write the counts, times and failures here")
    parser.add_argument("--requirements", action="store_true",
                        help="print what to pip install for TREE's tests (its transformers release first) and exit")
    args = parser.parse_args()
    if args.requirements and args.tree is not None and tree_version(args.tree):
        print("\n".join([f"transformers=={tree_version(args.tree)}", *TEST_REQUIREMENTS]))
        return 0
    if args.tree is None or not (args.tree / "tests").is_dir():
        print(HOW_TO_GET, file=sys.stderr)
        return 2
    missing = [f for f in args.files if not (args.tree / f).is_file()]
    if missing:
        print(f"not in {args.tree}: {', '.join(missing)}\n{HOW_TO_GET}", file=sys.stderr)
        return 2
    wanted, have = tree_version(args.tree), installed_version()
    if wanted != have:
        print(f"{args.tree} holds the tests of transformers {wanted}, but {have} is installed: install "
              f"transformers=={wanted} (nox -s transformers_tests does)", file=sys.stderr)
        return 2
    return run(args.tree.resolve(), args.files, args.timeout, shlex.split(args.pytest_args), args.json)


if __name__ == "__main__":
    sys.exit(main())
