"""A benchmark harness that holds on a noisy machine: ours against the direct PyTorch call.

Every benchmark in this folder reports *ratios* (ours / the direct call) measured the same way:

- rounds are **interleaved** and the order of the two sides is **shuffled** every round, so a
  burst of load on a shared machine hits both sides alike;
- each side is timed by **thread CPU time** (what the call costs) next to wall time (what the
  caller waits), and the per-round ratio of each is kept;
- a result is the **median and the range** of the per-round ratios, never a single best;
- a result whose ratio range is wider than ``WIDE`` (relative to its median) is flagged
  ``noisy``: too wide to rank two numbers that close, rerun on a quieter machine;
- threads are fixed (``--threads``, default 1) and stated; each benchmark is bounded in time
  (``--budget`` seconds of measuring, default 20).

``python benchmarks/bench_X.py --json out.json`` merges its results into ``out.json``;
``nox -s bench`` runs them all into ``benchmarks/results.json`` and regenerates the table in
the README from it (``benchmarks/readme_table.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ACCEL_FIRST_USE",
    "ACCEL_PACKAGES",
    "Case",
    "Result",
    "WIDE",
    "add_common_args",
    "compare_calls",
    "compare_pairs",
    "compare_processes",
    "ensure_bytecode",
    "machine",
    "print_results",
    "setup_threads",
    "write_json",
]

#: A ratio range wider than this fraction of its median is flagged ``noisy``.
WIDE = 0.20

#: accel-abstraction's first use after ``import torch``, and the distributions it loads
#: (compiled to bytecode before import costs are timed: :func:`ensure_bytecode`).
ACCEL_FIRST_USE = "import accel_abstraction as accel; accel.device()"
ACCEL_PACKAGES = ("accel_abstraction", "accel_cpu", "accel_cuda", "accel_neuron")


@dataclass(frozen=True)
class Case:
    """Two callables doing the same work: ours and the direct PyTorch (or alternative) call."""

    name: str
    ours: Callable[[], object]
    direct: Callable[[], object]
    direct_label: str = "torch"


@dataclass
class Result:
    """Per-round ratios (ours / direct) of one case, by thread CPU time and by wall time."""

    name: str
    direct_label: str
    ours_ns: float
    direct_ns: float
    cpu_ratios: list[float] = field(default_factory=list)
    wall_ratios: list[float] = field(default_factory=list)
    unit: str = "ns/call"

    @property
    def ratio(self) -> float:
        return statistics.median(self.cpu_ratios)

    @property
    def low(self) -> float:
        return min(self.cpu_ratios)

    @property
    def high(self) -> float:
        return max(self.cpu_ratios)

    @property
    def wall_ratio(self) -> float:
        return statistics.median(self.wall_ratios)

    @property
    def noisy(self) -> bool:
        return (self.high - self.low) > WIDE * self.ratio

    def summary(self) -> dict[str, Any]:
        return {
            "ratio": round(self.ratio, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "wall_ratio": round(self.wall_ratio, 4),
            "ours": round(self.ours_ns, 1),
            "direct": round(self.direct_ns, 1),
            "unit": self.unit,
            "against": self.direct_label,
            "rounds": len(self.cpu_ratios),
            "noisy": self.noisy,
        }


def add_common_args(parser: argparse.ArgumentParser, rounds: int = 11, budget: float = 20.0) -> None:
    parser.add_argument("--rounds", type=int, default=rounds, help="interleaved rounds (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default %(default)s)")
    parser.add_argument(
        "--budget", type=float, default=budget, help="seconds of measuring the calls (default %(default)s)"
    )
    parser.add_argument("--json", type=Path, help="merge the results into this JSON file")
    parser.add_argument("--seed", type=int, default=0, help="seed of the round order shuffle")


def setup_threads(threads: int) -> None:
    """Fix intra- and inter-op threads (set before torch does work; OMP_NUM_THREADS for children)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import torch

    torch.set_num_threads(threads)


def _time(fn: Callable[[], object], number: int) -> tuple[float, float]:
    """(thread CPU ns, wall ns) per call of ``fn`` over ``number`` calls."""
    c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
    for _ in range(number):
        fn()
    return (time.thread_time_ns() - c0) / number, (time.perf_counter_ns() - w0) / number


def _calibrate(fn: Callable[[], object], target_ns: float) -> int:
    number = 1
    while True:
        cpu, wall = _time(fn, number)
        if wall * number >= target_ns / 4 or number >= 1 << 22:
            return max(1, int(number * target_ns / max(wall * number, 1.0)))
        number *= 4


def compare_calls(cases: Sequence[Case], rounds: int, budget_s: float, seed: int = 0) -> list[Result]:
    """Interleaved, shuffled rounds of every case's two sides; each side measured ~budget/(2*cases*rounds)."""
    rng = random.Random(seed)
    slot_ns = budget_s * 1e9 / (2 * len(cases) * rounds)
    numbers = {}
    for case in cases:  # warm up and size each side to its time slot
        numbers[case.name] = (_calibrate(case.ours, slot_ns), _calibrate(case.direct, slot_ns))
    results = {case.name: Result(case.name, case.direct_label, 0.0, 0.0) for case in cases}
    ours_all: dict[str, list[float]] = {c.name: [] for c in cases}
    direct_all: dict[str, list[float]] = {c.name: [] for c in cases}
    for _ in range(rounds):
        order = list(cases)
        rng.shuffle(order)
        for case in order:
            n_ours, n_direct = numbers[case.name]
            sides = [("ours", case.ours, n_ours), ("direct", case.direct, n_direct)]
            rng.shuffle(sides)
            measured = {side: _time(fn, n) for side, fn, n in sides}
            res = results[case.name]
            res.cpu_ratios.append(measured["ours"][0] / measured["direct"][0])
            res.wall_ratios.append(measured["ours"][1] / measured["direct"][1])
            ours_all[case.name].append(measured["ours"][0])
            direct_all[case.name].append(measured["direct"][0])
    for case in cases:
        results[case.name].ours_ns = statistics.median(ours_all[case.name])
        results[case.name].direct_ns = statistics.median(direct_all[case.name])
    return [results[case.name] for case in cases]


def compare_pairs(case: Case, pairs: int, block: int = 20, seed: int = 0, warm_up: int = 5) -> Result:
    """One call of each side per pair, ``pairs`` pairs interleaved (order shuffled per pair).

    For calls that take milliseconds (a training step), where :func:`compare_calls` fits few
    rounds in its budget and a burst of load on a shared machine lands on one side of a round:
    here both sides of a pair are one call apart. Each pair gives a ratio (thread CPU time and
    wall time); the pairs are cut into blocks of ``block`` consecutive pairs and the result's
    per-round ratios are the blocks' median ratios, so its median is that of ``pairs // block``
    block medians and its range is how far a block of ``block`` pairs strays. ``warm_up``
    untimed pairs first.
    """
    rng = random.Random(seed)
    for _ in range(warm_up):
        case.ours()
        case.direct()
    cpu: list[float] = []
    wall: list[float] = []
    ours_ns: list[float] = []
    direct_ns: list[float] = []
    for _ in range(pairs):
        sides = [("ours", case.ours), ("direct", case.direct)]
        rng.shuffle(sides)
        measured = {side: _time(fn, 1) for side, fn in sides}
        cpu.append(measured["ours"][0] / measured["direct"][0])
        wall.append(measured["ours"][1] / measured["direct"][1])
        ours_ns.append(measured["ours"][0])
        direct_ns.append(measured["direct"][0])
    res = Result(case.name, case.direct_label, statistics.median(ours_ns), statistics.median(direct_ns), unit="ns/call")
    step = max(1, min(block, pairs))
    for start in range(0, pairs - step + 1, step):
        res.cpu_ratios.append(statistics.median(cpu[start : start + step]))
        res.wall_ratios.append(statistics.median(wall[start : start + step]))
    return res


_PROCESS_TIMER = """
import sys, time
def timed(code):
    c0, w0 = time.process_time(), time.perf_counter()
    exec(compile(code, "<bench>", "exec"), globals())
    return time.process_time() - c0, time.perf_counter() - w0
print(*timed(sys.argv[1]), *timed(sys.argv[2]))
"""


def ensure_bytecode(packages: Sequence[str]) -> list[str]:
    """Compile the installed ``packages`` to bytecode, as ``pip install`` does; return those not found.

    An editable install (or ``PYTHONDONTWRITEBYTECODE=1``, set on some CI machines) leaves
    no ``__pycache__``: every fresh interpreter would then compile the package's source
    again (~20 ms for accel-abstraction) while torch, installed from a wheel, loads its
    bytecode. Import costs are measured against installed packages, so both sides get it.
    """
    import compileall
    import importlib.util

    missing = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            missing.append(name)
            continue
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=2, workers=1)
    return missing


def compare_processes(
    name: str,
    base: str,
    extra: str,
    rounds: int,
    direct_label: str = "torch",
    env: dict[str, str] | None = None,
    packages: Sequence[str] = (),
) -> Result:
    """What running ``extra`` after ``base`` costs, relative to ``base``, in fresh interpreters.

    For import and first-use costs: ``base`` is ``import torch`` and ``extra`` the code under
    test, so ours = ``base`` + ``extra`` and direct = ``base``. Each round is one fresh
    interpreter that times ``base`` and then ``extra`` (process CPU time and wall time;
    interpreter start-up excluded), and the round's ratio is (base + extra) / base. Pairing
    both in one process keeps the ratio as steady as ``extra`` itself: ``import torch`` alone
    varies by ±10% between processes on a busy machine, more than the few per cent measured.
    ``packages`` are compiled to bytecode first (:func:`ensure_bytecode`); one untimed
    interpreter warms the file cache.
    """
    ensure_bytecode(packages)
    full_env = {**os.environ, **(env or {})}
    res = Result(name, direct_label, 0.0, 0.0, unit="ms")
    ours_ms, direct_ms = [], []
    for warm_up in [True] + [False] * rounds:
        out = subprocess.run(
            [sys.executable, "-c", _PROCESS_TIMER, base, extra], capture_output=True, text=True, env=full_env, check=True
        )
        base_cpu, base_wall, extra_cpu, extra_wall = map(float, out.stdout.split()[-4:])
        if warm_up:
            continue
        res.cpu_ratios.append((base_cpu + extra_cpu) / base_cpu)
        res.wall_ratios.append((base_wall + extra_wall) / base_wall)
        ours_ms.append((base_cpu + extra_cpu) * 1e3)
        direct_ms.append(base_cpu * 1e3)
    res.ours_ns, res.direct_ns = statistics.median(ours_ms), statistics.median(direct_ms)
    return res


def machine(threads: int) -> dict[str, Any]:
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "threads": threads,
        "platform": platform.platform(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def print_results(title: str, results: Sequence[Result], threads: int) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{title} ({threads} thread{'s' if threads != 1 else ''}; ratio = ours / direct, thread CPU time)")
    for col in ("case", "ours", "direct", "ratio [range]", "wall ratio", ""):
        table.add_column(col, justify="left" if col in ("case", "") else "right")
    for r in results:
        unit = r.unit.split("/")[0]
        table.add_row(
            r.name,
            f"{r.ours_ns:.4g} {unit}",
            f"{r.direct_ns:.4g} {unit} ({r.direct_label})",
            f"{r.ratio:.3f} [{r.low:.3f}-{r.high:.3f}]",
            f"{r.wall_ratio:.3f}",
            "[yellow]noisy: range too wide to rank; rerun on a quieter machine" if r.noisy else "",
        )
    Console(width=140).print(table)
    if any(r.noisy for r in results):
        print(f"warning: {sum(r.noisy for r in results)} result(s) vary by more than {WIDE:.0%} between rounds", file=sys.stderr)


def write_json(path: Path, benchmark: str, results: Sequence[Result], threads: int, extra: dict[str, Any] | None = None) -> None:
    """Merge ``results`` under ``benchmark`` into the JSON file at ``path`` (created if absent)."""
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"schema": 1, "benchmarks": {}}
    data["benchmarks"][benchmark] = {
        "machine": machine(threads),
        "results": {r.name: r.summary() for r in results},
        **(extra or {}),
    }
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


