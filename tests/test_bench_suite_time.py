"""benchmarks/bench_suite_time.py: same tests matched across devices, accelerator-only tests apart."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_suite_time as bench  # noqa: E402


def _junit(path: Path, cls: str, cases: list[tuple[str, float, str]]) -> None:
    body = []
    for name, seconds, outcome in cases:
        inner = {"passed": "", "failed": '<failure message="boom"/>', "skipped": '<skipped message="cpu"/>'}[outcome]
        body.append(f'<testcase classname="{cls}" name="{name}" time="{seconds}">{inner}</testcase>')
    path.write_text(f'<testsuites><testsuite name="pytest">{"".join(body)}</testsuite></testsuites>')


def test_ratio_counts_only_tests_both_devices_passed(tmp_path: Path) -> None:
    _junit(tmp_path / "test_view_ops-cpu.xml", "test_view_ops.TestViewOpsCPU", [
        ("test_view_cpu_float32", 1.0, "passed"),
        ("test_flip_cpu", 2.0, "passed"),
        ("test_broken_cpu", 5.0, "passed"),
        ("test_pinned_cpu", 0.0, "skipped"),
    ])  # fmt: skip
    _junit(tmp_path / "test_view_ops-neuron.xml", "test_view_ops.TestViewOpsPRIVATEUSE1", [
        ("test_view_neuron_float32", 1.5, "passed"),
        ("test_flip_neuron", 2.0, "passed"),
        ("test_broken_neuron", 9.0, "failed"),
        ("test_pinned_neuron", 4.0, "passed"),
    ])  # fmt: skip
    (row,) = bench.collect(tmp_path)
    assert (row.same_tests, row.cpu_s, row.neuron_s) == (2, 3.0, 3.5)
    assert row.ratio is not None and abs(row.ratio - 3.5 / 3.0) < 1e-9
    assert (row.accelerator_only, row.accelerator_only_s) == (1, 4.0)


def test_exit_status_says_whether_the_target_holds(tmp_path: Path) -> None:
    _junit(tmp_path / "f-cpu.xml", "f.TCPU", [("test_a_cpu", 10.0, "passed")])
    _junit(tmp_path / "f-neuron.xml", "f.TPRIVATEUSE1", [("test_a_neuron", 10.5, "passed")])
    assert bench.main([str(tmp_path)]) == 0
    _junit(tmp_path / "f-neuron.xml", "f.TPRIVATEUSE1", [("test_a_neuron", 12.0, "passed")])
    assert bench.main([str(tmp_path)]) == 1
    assert bench.main([str(tmp_path / "empty")]) == 2
