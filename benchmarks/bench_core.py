"""Per-call cost of the public API against the direct torch call, and import cost. Prints ratios.

Run: ``python benchmarks/bench_core.py [--backend cpu]``. Not a test: the targets
(per-call ratio <= 1.10, import ratio <= 1.05) are read off the printed table.
Each figure is the best of several alternating rounds, measured in the same process.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable

import torch

import accel_abstraction as accel


def best_ns(fn: Callable[[], object], number: int, rounds: int) -> float:
    timer = timeit.Timer(fn)
    return min(timer.timeit(number) for _ in range(rounds)) / number * 1e9


def per_call(backend: str, number: int, rounds: int) -> list[tuple[str, float, float]]:
    accel.use(backend)
    dev_type = accel.device_type()

    def direct(expr: str) -> Callable[[], object]:
        # the literal code a user writes today, e.g. torch.cpu.synchronize()
        return eval(f"lambda: {expr}", {"torch": torch})  # noqa: S307 - fixed strings

    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        ("synchronize()", lambda: accel.synchronize(), direct(f"torch.{dev_type}.synchronize()")),
        ("device()", lambda: accel.device(), direct(f"torch.device({dev_type!r})")),
        ("device_count()", lambda: accel.device_count(), direct(f"torch.{dev_type}.device_count()")),
        ("manual_seed(0)", lambda: accel.manual_seed(0), direct("torch.manual_seed(0)")),
    ]
    rows = []
    for name, ours, direct in cases:
        # alternate so both see the same machine state; keep the best of each
        o = min(best_ns(ours, number, 1) for _ in range(rounds))
        d = min(best_ns(direct, number, 1) for _ in range(rounds))
        rows.append((name, o, d))
    return rows


def import_cost(rounds: int) -> tuple[float, float]:
    """Median seconds of ``import torch`` and of ``import torch, accel_abstraction``.

    Both are timed in the same fresh interpreter per round (torch first, then accel on
    top), so the ratio is not swamped by the +-30% that torch's own import time varies
    between processes on a shared machine.
    """
    code = (
        "import time; t0 = time.perf_counter(); import torch; t1 = time.perf_counter(); "
        "import accel_abstraction; t2 = time.perf_counter(); print(t1 - t0, t2 - t0)"
    )
    plain, ours = [], []
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        a, b = map(float, out.stdout.split())
        plain.append(a)
        ours.append(b)
    return statistics.median(plain), statistics.median(ours)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--import-rounds", type=int, default=9)
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"accel-abstraction per-call cost on {args.backend!r} (torch {torch.__version__})")
    for col in ("call", "accel (ns)", "direct torch (ns)", "ratio"):
        table.add_column(col, justify="right" if col != "call" else "left")
    for name, ours, direct in per_call(args.backend, args.number, args.rounds):
        table.add_row(f"accel.{name}", f"{ours:.0f}", f"{direct:.0f}", f"{ours / direct:.2f}")
    plain, ours = import_cost(args.import_rounds)
    table.add_row("import torch, accel_abstraction", f"{ours * 1e9:.3g}", f"{plain * 1e9:.3g}", f"{ours / plain:.3f}")
    Console().print(table)


if __name__ == "__main__":
    main()
