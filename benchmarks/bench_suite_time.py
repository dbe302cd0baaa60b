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
environment). Exit status 0 when the total ratio is within the target, 1 when it is not, 2 when
there is nothing to compare.
"""

from __future__ import annotations

import argparse
import json
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


def collect(results: Path, clock: str = "wall") -> list[FileTimes]:
    """Every file of ``results`` that has a junit XML for both devices, timed by `clock` (:data:`CLOCKS`);
    with the thread clock, a file whose run did not record it is left out (said on stderr)."""
    rows = []
    for cpu_xml in sorted(results.glob("*-cpu.xml")):
        stem = cpu_xml.name[: -len("-cpu.xml")]
        neuron_xml = results / f"{stem}-neuron.xml"
        if not neuron_xml.exists():
            continue
        try:
            cpu, neuron = read_junit(cpu_xml, "cpu", clock), read_junit(neuron_xml, "neuron", clock)
        except MissingClock as e:  # an older run's files beside this one's: left out, and said so
            print(f"bench_suite_time: {stem} left out: {e}", file=sys.stderr)
            continue
        rows.append(file_times(stem, cpu, neuron))
    return rows


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="?", help="folder of <file>-cpu.xml / <file>-neuron.xml")
    parser.add_argument("--run", nargs="+", metavar="TREE_OR_FILE", help="run torch_suite.py TREE FILE... first")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--clock", choices=CLOCKS, default="wall",
        help="wall: pytest's time per test (the target's measure); thread: each test call's thread CPU time",
    )  # fmt: skip
    args = parser.parse_args(argv)
    results = args.results
    if args.run:
        tree = Path(args.run[0]).resolve()
        subprocess.run([sys.executable, str(SCRIPTS / "torch_suite.py"), str(tree), *args.run[1:]], check=False)
        results = results or tree / ".accel-torch"
    if results is None:
        parser.error("give the results folder, or --run TREE [FILE ...]")
    rows = collect(results, args.clock)
    if not rows:
        print(f"bench_suite_time: no file in {results} has junit XML for both cpu and neuron", file=sys.stderr)
        return 2
    print_table(rows)
    whole = total(rows)
    verdict = whole.ratio is not None and whole.ratio <= TARGET
    print(f"\nneuron / cpu on the same tests ({args.clock} clock): {_ratio_text(whole)} (target <= {TARGET:.2f}x): "
          f"{'within' if verdict else 'over'}")  # fmt: skip
    if args.json:
        rows_out = [asdict(r) | {"ratio": r.ratio} for r in [*rows, whole]]
        payload = {"target": TARGET, "clock": args.clock, "rows": rows_out}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0 if verdict else 1


if __name__ == "__main__":
    raise SystemExit(main())
