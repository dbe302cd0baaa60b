"""Wall time of a test suite on the emulated neuron device against the CPU, on the same tests.

A team that runs its CI on the emulated device pays its cost on every test. This reads the
junit XML that ``nox -s torch_tests`` / ``transformers_tests`` write for each file and device
(``TREE/.accel-torch/<file>-cpu.xml`` and ``<file>-neuron.xml``, or ``.accel-transformers``),
matches the tests by name with the device taken out (``torch_suite.generic_id``), and prints per
file and in total:

- **same tests**: the tests that passed on both devices, their summed time on each, and the
  ratio neuron / CPU (the target: at most :data:`TARGET`);
- **accelerator-only**: tests the device runs and the CPU skips (PyTorch's ``onlyAcceleratorOnly``
  / ``@onlyCUDA``-style tests instantiated for PrivateUse1), counted apart, with their time:
  they have no CPU time to compare with.

Per-test times are pytest's (setup, call and teardown of each test), so process start-up and
collection are left out on both sides alike. ``--clock thread`` sums each test call's thread CPU
time instead (the junit property ``thread_cpu_s`` that ``torch_suite.py``'s legs record through
``suite_clock.py``): on a shared machine the wall-time ratio of one run carries the neighbours' load
(single runs of the same code have moved by 0.1-0.15), the thread CPU time only the test's own work.
The target is the wall-time ratio's; the thread clock is how two versions are compared at a load.

Run after the suite::

    nox -s torch_tests -- .cache/pytorch-index test_shape_ops.py nn/test_dropout.py
    python benchmarks/bench_suite_time.py .cache/pytorch-index/.accel-torch [--json out.json]

or let it run the suite first: ``--run TREE FILE ...`` (through ``torch_suite.py`` in this
environment). One run's ratio moves with the neighbours' load (test_modules.py, the same code, five
runs with both legs at once: 1.08x-1.16x), so a verdict can rest on several: ``--run ... --repeat N``
keeps each run's junit XML in ``<results>/run-K/``, and several results folders given at once
(``bench_suite_time.py DIR1 DIR2 ...``) are read as runs of one suite: each run's total ratio is
printed, and the verdict is their median's; beside it, each test at its fastest run on each device
(:func:`best_of_runs`: load only adds time, so that is the suite on a quiet machine). Exit status 0
when the (median) total ratio is within the target, 1 when it is not, 2 when there is nothing to
compare.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "plugins" / "neuron" / "tests" / "scripts"
sys.path.insert(0, str(SCRIPTS))

from torch_suite import generic_id  # noqa: E402
from transformers_suite import case_outcome  # noqa: E402

#: The ceiling issue #35 sets: a suite on the emulated device takes at most 1.10x the CPU's time.
TARGET = 1.10
DEVICES = ("cpu", "neuron")


@dataclass
class FileTimes:
    """One test file's times: the tests both devices passed, and the device's own tests."""

    file: str
    same_tests: int = 0
    cpu_s: float = 0.0
    neuron_s: float = 0.0
    accelerator_only: int = 0
    accelerator_only_s: float = 0.0

    @property
    def ratio(self) -> float | None:
        return self.neuron_s / self.cpu_s if self.cpu_s > 0 else None


#: The clocks a suite is timed by: pytest's wall time of each test, or the thread CPU time of its call.
CLOCKS = ("wall", "thread")
#: The junit property ``suite_clock.py`` writes (plugins/neuron/tests/scripts).
THREAD_PROPERTY = "thread_cpu_s"


class MissingClock(ValueError):
    """A junit XML without the thread CPU times ``--clock thread`` reads."""


def read_junit(path: Path, device: str, clock: str = "wall") -> dict[str, tuple[str, float]]:
    """Generic test id -> (outcome, seconds by `clock`) of one junit XML file."""
    out: dict[str, tuple[str, float]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, _ = case_outcome(case)
        test_id = generic_id(f"{case.get('classname')}::{case.get('name')}", device)
        if clock == "wall":
            seconds = float(case.get("time") or 0.0)
        else:
            found = [p.get("value") for p in case.iter("property") if p.get("name") == THREAD_PROPERTY]
            if not found and outcome == "passed":
                raise MissingClock(
                    f"{path}: test {case.get('name')} has no {THREAD_PROPERTY} property; --clock thread reads the "
                    "junit XML of a torch_suite.py run (its legs load suite_clock.py): run the suite again"
                )
            seconds = float(found[0]) if found else 0.0
        out[test_id] = (outcome, seconds)
    return out


def file_times(stem: str, cpu: dict[str, tuple[str, float]], neuron: dict[str, tuple[str, float]]) -> FileTimes:
    row = FileTimes(stem)
    for test_id, (outcome, seconds) in neuron.items():
        on_cpu = cpu.get(test_id)
        if outcome == "passed" and on_cpu is not None and on_cpu[0] == "passed":
            row.same_tests += 1
            row.cpu_s += on_cpu[1]
            row.neuron_s += seconds
        elif outcome != "skipped" and (on_cpu is None or on_cpu[0] == "skipped"):
            row.accelerator_only += 1
            row.accelerator_only_s += seconds
    return row


Times = dict[str, tuple[str, float]]
#: One results folder read: (file, cpu times, neuron times) per file with a junit XML for both devices.
Run = list[tuple[str, Times, Times]]


def read_run(results: Path, clock: str = "wall") -> Run:
    """(file, cpu times, neuron times) of every file of ``results`` with a junit XML for both devices;
    with the thread clock, a file whose run did not record it is left out (said on stderr)."""
    pairs = []
    for cpu_xml in sorted(results.glob("*-cpu.xml")):
        stem = cpu_xml.name[: -len("-cpu.xml")]
        neuron_xml = results / f"{stem}-neuron.xml"
        if not neuron_xml.exists():
            continue
        try:
            pairs.append((stem, read_junit(cpu_xml, "cpu", clock), read_junit(neuron_xml, "neuron", clock)))
        except MissingClock as e:  # an older run's files beside this one's: left out, and said so
            print(f"bench_suite_time: {stem} left out: {e}", file=sys.stderr)
    return pairs


def collect(results: Path, clock: str = "wall") -> list[FileTimes]:
    """Every file of ``results`` that has a junit XML for both devices, timed by `clock` (:data:`CLOCKS`)."""
    return [file_times(stem, cpu, neuron) for stem, cpu, neuron in read_run(results, clock)]


def best_of_runs(runs: list[Run]) -> FileTimes:
    """The tests every run passed on both devices, each at its fastest run on each device.

    Load only ever adds time, so this is what the suite costs on a quiet machine: a second view beside
    the runs' median, which the verdict stays with (a run's ratio moves with its neighbours' load).
    """
    best: dict[tuple[str, str], tuple[float, float, int]] = {}  # (file, test) -> cpu s, neuron s, runs
    for run in runs:
        for stem, cpu, neuron in run:
            for test_id, (outcome, seconds) in neuron.items():
                on_cpu = cpu.get(test_id)
                if outcome != "passed" or on_cpu is None or on_cpu[0] != "passed":
                    continue
                c, n, k = best.get((stem, test_id), (on_cpu[1], seconds, 0))
                best[(stem, test_id)] = (min(c, on_cpu[1]), min(n, seconds), k + 1)
    row = FileTimes("best of runs")
    for c, n, k in best.values():
        if k == len(runs):
            row.same_tests += 1
            row.cpu_s += c
            row.neuron_s += n
    return row


def total(rows: list[FileTimes]) -> FileTimes:
    out = FileTimes("total")
    for row in rows:
        out.same_tests += row.same_tests
        out.cpu_s += row.cpu_s
        out.neuron_s += row.neuron_s
        out.accelerator_only += row.accelerator_only
        out.accelerator_only_s += row.accelerator_only_s
    return out


def _ratio_text(row: FileTimes) -> str:
    return "-" if row.ratio is None else f"{row.ratio:.2f}x"


def print_table(rows: list[FileTimes]) -> None:
    print(f"{'file':28} {'same tests':>10} {'cpu s':>9} {'neuron s':>9} {'ratio':>7} {'accel-only':>10} {'their s':>8}")
    for row in [*rows, total(rows)]:
        print(f"{row.file:28} {row.same_tests:>10} {row.cpu_s:>9.1f} {row.neuron_s:>9.1f} {_ratio_text(row):>7} "
              f"{row.accelerator_only:>10} {row.accelerator_only_s:>8.1f}")  # fmt: skip


def run_suite(tree: Path, files: list[str], repeat: int) -> list[Path]:
    """Run ``torch_suite.py TREE FILE...`` (`files`: its files and options) `repeat` times: the folders
    holding each run's junit XML (one run: the suite's own ``TREE/.accel-torch``; more: a copy of each
    run's in ``TREE/.accel-torch/run-K``)."""
    results = tree / ".accel-torch"
    runs = []
    for k in range(1, repeat + 1):
        subprocess.run([sys.executable, str(SCRIPTS / "torch_suite.py"), str(tree), *files], check=False)
        if repeat == 1:
            return [results]
        kept = results / f"run-{k}"
        shutil.rmtree(kept, ignore_errors=True)  # a kept run of an earlier call must not mix with this one
        kept.mkdir(parents=True)
        for xml in results.glob("*.xml"):
            shutil.copy2(xml, kept / xml.name)
        runs.append(kept)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "results", type=Path, nargs="*",
        help="folder of <file>-cpu.xml / <file>-neuron.xml; several: runs of one suite, judged by their median",
    )  # fmt: skip
    parser.add_argument(
        "--run", nargs="+", metavar="TREE_OR_FILE",
        help="run torch_suite.py TREE FILE... first",
    )  # fmt: skip
    parser.add_argument("--concurrent-legs", action="store_true", help="with --run: torch_suite.py's, both legs at once")
    parser.add_argument("--pytest-args", help="with --run: torch_suite.py's, options for every pytest run, one string")
    parser.add_argument("--repeat", type=int, default=1, help="with --run: run the suite this many times (default 1)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--clock", choices=CLOCKS, default="wall",
        help="wall: pytest's time per test (the target's measure); thread: each test call's thread CPU time",
    )  # fmt: skip
    args = parser.parse_args(argv)
    suite_options = ["--concurrent-legs"] if args.concurrent_legs else []
    if args.pytest_args:
        suite_options += ["--pytest-args", args.pytest_args]
    if suite_options and not args.run:
        parser.error("--concurrent-legs and --pytest-args are torch_suite.py's: give --run TREE [FILE ...] with them")
    if args.repeat < 1:
        parser.error(f"--repeat takes a count of runs (1 or more), not {args.repeat}")
    folders: list[Path] = list(args.results)
    if args.run and folders:
        parser.error(f"--run writes its own results: give no results folder with it (got {' '.join(map(str, folders))})")
    if args.run:
        folders = run_suite(Path(args.run[0]).resolve(), [*args.run[1:], *suite_options], args.repeat)
    elif args.repeat != 1:
        parser.error("--repeat runs the suite: give --run TREE [FILE ...] with it")
    if not folders:
        parser.error("give the results folder(s), or --run TREE [FILE ...]")
    read = [(folder, read_run(folder, args.clock)) for folder in folders]
    read = [(folder, run) for folder, run in read if run]
    runs = [(folder, [file_times(*pair) for pair in run]) for folder, run in read]
    if not runs:
        names = ", ".join(str(f) for f in folders)
        print(f"bench_suite_time: no file in {names} has junit XML for both cpu and neuron", file=sys.stderr)
        return 2
    for folder, rows in runs:
        if len(runs) > 1:
            print(f"\n{folder}:")
        print_table(rows)
    ratios = [r for r in (total(rows).ratio for _, rows in runs) if r is not None]
    ratio = statistics.median(ratios) if ratios else None
    verdict = ratio is not None and ratio <= TARGET
    what = "" if len(runs) == 1 else f"median of {len(runs)} runs ({', '.join(f'{r:.2f}x' for r in ratios)}) "
    shown = "-" if ratio is None else f"{ratio:.2f}x"
    print(f"\nneuron / cpu on the same tests ({args.clock} clock): {what}{shown} (target <= {TARGET:.2f}x): "
          f"{'within' if verdict else 'over'}")  # fmt: skip
    best = best_of_runs([run for _, run in read]) if len(read) > 1 else None
    if best is not None:
        print(f"each test at its fastest of the {len(runs)} runs ({best.same_tests} tests every run passed): "
              f"cpu {best.cpu_s:.1f} s, neuron {best.neuron_s:.1f} s, {_ratio_text(best)} (no load's view; "
              "the verdict is the median's)")  # fmt: skip
    if args.json:
        payload = {
            "target": TARGET, "clock": args.clock, "ratio": ratio,
            "runs": [
                {"results": str(folder), "rows": [asdict(r) | {"ratio": r.ratio} for r in [*rows, total(rows)]]}
                for folder, rows in runs
            ],
        }  # fmt: skip
        if len(runs) == 1:
            payload["rows"] = payload["runs"][0]["rows"]  # type: ignore[index]  # the one run's rows, as before
        if best is not None:
            payload["best_of_runs"] = asdict(best) | {"ratio": best.ratio}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0 if verdict else 1


if __name__ == "__main__":
    raise SystemExit(main())
