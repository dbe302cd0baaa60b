"""False-alarm and detection rates of ``accel parity --seeds`` over repeated invocations.

Each invocation is ``accel parity examples/dropout_train.py --backends cpu,neuron --seeds N``
with another base seed for the script (``-- --seed S``), so invocations are independent
experiments (within one, the N runs' seeds are derived from S). Two conditions:

* ``equivalent``: the same training on both backends (only the dropout masks differ: the
  device's own generator): every exit 1 is a false alarm;
* ``perturbed``: the neuron leg's learning rate x1.5 (``--lr-factor-on neuron=1.5``): every
  exit 1 is a detection.

``python benchmarks/parity_rates.py --invocations 8 --seeds 5 --jobs 2 --json rates.json``
prints each invocation's exit status and verdict, then the rates. Not a timing benchmark: it
counts verdicts, so a loaded machine changes how long it takes, not what it measures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "dropout_train.py"
CONDITIONS = {"equivalent": [], "perturbed": ["--lr-factor-on", "neuron=1.5"]}


def invoke(seed: int, extra: list[str], seeds: int, jobs: int, out: Path) -> dict[str, object]:
    command = [
        sys.executable, "-m", "accel_abstraction", "parity", str(SCRIPT), "--backends", "cpu,neuron",
        "--seeds", str(seeds), "--jobs", str(jobs), "--no-plot", "--no-progress", "--out", str(out),
        "--", "--seed", str(seed), *extra,
    ]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    doc = json.loads((out / "parity.json").read_text()) if (out / "parity.json").exists() else {}
    comparison = (doc.get("comparisons") or [{}, {}])[-1]
    stats = comparison.get("statistics") or {}
    return {
        "seed": seed,
        "exit": proc.returncode,
        "verdict": comparison.get("verdict"),
        "min_p_holm": stats.get("min_p_holm"),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--invocations", type=int, default=8, help="per condition")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--first-seed", type=int, default=1000)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    results: dict[str, list[dict[str, object]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in CONDITIONS.items():
            results[name] = []
            for i in range(args.invocations):
                row = invoke(args.first_seed + i, extra, args.seeds, args.jobs, Path(tmp) / f"{name}-{i}")
                results[name].append(row)
                print(name, json.dumps(row), flush=True)
    summary = {}
    for name, rows in results.items():
        diverged = sum(1 for r in rows if r["exit"] == 1)
        failed = sum(1 for r in rows if r["exit"] not in (0, 1))
        summary[name] = {"invocations": len(rows), "diverged": diverged, "failed": failed}
        print(f"{name}: {diverged}/{len(rows)} diverged ({failed} failed)")
    if args.json is not None:
        args.json.write_text(json.dumps({"seeds": args.seeds, "summary": summary, "runs": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
