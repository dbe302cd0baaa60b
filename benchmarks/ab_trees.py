"""Two checkouts side by side: the emulator benchmark's ratios and the first use, interleaved.

A change that moves code (issue 36: the C++ core split, one routing table, settings declared
once) must leave the speed where it was. Run on one machine, one after the other, two numbers
from two days differ by the load more than by the change; so this runs the two trees in
alternation (A, B, A, B, ...), each in its own venv, and prints per case the median of each
tree's ratios (emulated neuron / the same call on the CPU, measured in one process by
``bench_neuron_emulator.py --hot-path native``) and B's over A's. It also times the first use
(``import accel_abstraction, torch``, select the emulated device, one op; the C++ core already
built) in fresh interpreters, alternating likewise.

Each tree is a checkout with its own ``.venv`` (README line 1), e.g. a ``git worktree`` of the
older commit::

    git worktree add --detach ../base 28b7491 && (cd ../base && python3 -m venv .venv && .venv/bin/pip install -r requirements-dev.txt)
    python benchmarks/ab_trees.py ../base . --rounds 3 --first-use 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = "benchmarks/bench_neuron_emulator.py"
FIRST_USE = "import accel_abstraction as a, torch; a.device(); torch.ones(2, device='neuron').sum().item()"
ENV = {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}


def _python(tree: Path) -> str:
    exe = tree / ".venv" / "bin" / "python"
    if not exe.exists():
        raise SystemExit(f"{tree}: no .venv/bin/python; set the tree up first (README line 1)")
    return str(exe)


def _bench(tree: Path, script: Path, out: Path, extra: list[str]) -> dict[str, float]:
    cmd = [_python(tree), str(script), "--hot-path", "native", "--json", str(out), *extra]
    subprocess.run(cmd, cwd=tree, env={**os.environ, **ENV}, check=True, stdout=subprocess.DEVNULL)
    results = json.loads(out.read_text())["benchmarks"]["neuron_emulator"]["results"]
    return {name: r["ratio"] for name, r in results.items()}


def _first_use(tree: Path) -> float:
    start = time.perf_counter()
    subprocess.run([_python(tree), "-c", FIRST_USE], cwd=tree, env={**os.environ, **ENV}, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="the reference tree (the older commit)")
    parser.add_argument("b", type=Path, help="the tree measured against it")
    parser.add_argument(
        "--rounds", type=int, default=3, help="benchmark runs per tree, alternating (default 3)"
    )
    parser.add_argument("--first-use", type=int, default=10, help="first-use timings per tree (default 10)")
    parser.add_argument("--pairs", type=int, default=400, help="main-job step pairs per benchmark run")
    parser.add_argument(
        "--step-pairs", type=int, default=200,
        help="the other step cases' interleaved pairs per benchmark run (0: time them in rounds, as before)",
    )  # fmt: skip
    args = parser.parse_args()
    trees = {"a": args.a.resolve(), "b": args.b.resolve()}
    # B's benchmark script measures both trees (each tree's own emulator, from its own venv), so a
    # change to the measuring code cannot pass for a change in speed
    script = trees["b"] / BENCH
    for tree in trees.values():  # build each tree's C++ core before anything is timed
        _first_use(tree)
    ratios: dict[str, dict[str, list[float]]] = {"a": {}, "b": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for key, tree in trees.items():
                extra = ["--pairs", str(args.pairs), "--step-pairs", str(args.step_pairs)]
                for name, ratio in _bench(tree, script, Path(tmp) / f"{key}{i}.json", extra).items():
                    ratios[key].setdefault(name, []).append(ratio)
    first: dict[str, list[float]] = {"a": [], "b": []}
    for _ in range(args.first_use):
        for key, tree in trees.items():
            first[key].append(_first_use(tree))
    print(
        f"A = {trees['a']}\nB = {trees['b']}\nload average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    print(f"{'case':62s} {'A':>7s} {'B':>7s} {'B/A':>7s}")
    for name in ratios["a"]:
        if name in ratios["b"]:
            a, b = statistics.median(ratios["a"][name]), statistics.median(ratios["b"][name])
            print(f"{name[:62]:62s} {a:7.3f} {b:7.3f} {b / a:7.3f}")
    if args.first_use:
        a, b = statistics.median(first["a"]), statistics.median(first["b"])
        print(f"{'first use (s, wall, fresh interpreter)':62s} {a:7.2f} {b:7.2f} {b / a:7.3f}")


if __name__ == "__main__":
    sys.exit(main())
