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
fails on neuron, with the first line of its message.
"""

from __future__ import annotations

import argparse
import os
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
    "Get the tree of the installed version, e.g.\n"
    "  git clone --depth 1 --branch v$(python -c 'import transformers; print(transformers.__version__)') "
    "https://github.com/huggingface/transformers .cache/transformers\n"
    "then: nox -s transformers_tests -- .cache/transformers"
)
DEVICES = {
    "cpu": {"ACCEL_BACKEND": "cpu"},
    "neuron": {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1",
               "TRANSFORMERS_TEST_DEVICE": "neuron", "TRANSFORMERS_TEST_DEVICE_SPEC": SPEC_NAME},
}  # fmt: skip


def _outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, first line of the message) from a junit XML file."""
    out: dict[str, tuple[str, str]] = {}
    if not junit.exists():
        return out
    for case in ET.parse(junit).getroot().iter("testcase"):
        tid = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = (node.get("message") or "").splitlines()[0][:160] if node.get("message") else ""
                break
        out[tid] = (outcome, message)
    return out


def run(tree: Path, files: list[str], timeout: float) -> int:
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
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", str(junit), test_file],
                cwd=tree, env=full, timeout=timeout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            per_device[device] = (_outcomes(junit), time.perf_counter() - start)
        cpu, neuron = per_device["cpu"][0], per_device["neuron"][0]
        for tid, (outcome, _) in cpu.items():
            got = neuron.get(tid, ("missing", ""))
            if outcome == "passed" and got[0] in ("failed", "error", "missing"):
                neuron_only.append((test_file, tid, got[1]))
        for device, (outcomes, seconds) in per_device.items():
            counts = {k: sum(1 for o, _ in outcomes.values() if o == k) for k in ("passed", "failed", "skipped", "error")}
            rows.append((test_file, device, counts, seconds))
    print(f"{'file':48} {'device':7} {'passed':>7} {'failed':>7} {'skipped':>8} {'errors':>7} {'time':>8}")
    for test_file, device, c, seconds in rows:
        print(f"{test_file:48} {device:7} {c['passed']:7} {c['failed']:7} {c['skipped']:8} {c['error']:7} {seconds:7.0f}s")
    print(f"\n{len(neuron_only)} test(s) pass on the CPU and fail on neuron:")
    for test_file, tid, message in neuron_only:
        print(f"  {test_file} {tid}: {message}")
    return 1 if neuron_only else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", nargs="?", type=Path, help="a huggingface/transformers checkout (with tests/)")
    parser.add_argument("files", nargs="*", default=list(DEFAULT_FILES))
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per file and device")
    args = parser.parse_args()
    if args.tree is None or not (args.tree / "tests").is_dir():
        print(HOW_TO_GET, file=sys.stderr)
        return 2
    missing = [f for f in args.files if not (args.tree / f).is_file()]
    if missing:
        print(f"not in {args.tree}: {', '.join(missing)}\n{HOW_TO_GET}", file=sys.stderr)
        return 2
    return run(args.tree.resolve(), args.files, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
