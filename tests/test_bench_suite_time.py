"""benchmarks/bench_suite_time.py: same tests matched across devices, accelerator-only tests apart."""

from __future__ import annotations

import json
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


def _junit_with_clock(path: Path, cls: str, cases: list[tuple[str, float, float | None]]) -> None:
    body = []
    for name, wall, thread in cases:
        props = "" if thread is None else f'<properties><property name="thread_cpu_s" value="{thread}"/></properties>'
        body.append(f'<testcase classname="{cls}" name="{name}" time="{wall}">{props}</testcase>')
    path.write_text(f'<testsuites><testsuite name="pytest">{"".join(body)}</testsuite></testsuites>')


def test_the_thread_clock_sums_each_tests_recorded_cpu_time_and_says_when_a_run_has_none(tmp_path: Path) -> None:
    _junit_with_clock(tmp_path / "f-cpu.xml", "f.TCPU", [("test_a_cpu", 9.0, 2.0), ("test_b_cpu", 9.0, 1.0)])
    _junit_with_clock(tmp_path / "f-neuron.xml", "f.TPRIVATEUSE1", [("test_a_neuron", 30.0, 2.5), ("test_b_neuron", 1.0, 1.0)])
    (wall,) = bench.collect(tmp_path)
    (thread,) = bench.collect(tmp_path, "thread")
    assert (wall.cpu_s, wall.neuron_s) == (18.0, 31.0)
    assert (thread.cpu_s, thread.neuron_s) == (3.0, 3.5)
    assert bench.main([str(tmp_path), "--clock", "thread"]) == 1  # 1.17x
    _junit_with_clock(tmp_path / "f-cpu.xml", "f.TCPU", [("test_a_cpu", 9.0, None), ("test_b_cpu", 9.0, 1.0)])
    assert bench.main([str(tmp_path), "--clock", "thread"]) == 2  # a junit XML from a run without the plugin
    _junit_with_clock(tmp_path / "g-cpu.xml", "g.TCPU", [("test_c_cpu", 1.0, 1.0)])
    _junit_with_clock(tmp_path / "g-neuron.xml", "g.TPRIVATEUSE1", [("test_c_neuron", 1.0, 1.05)])
    (row,) = bench.collect(tmp_path, "thread")  # f is left out, g is read
    assert (row.file, row.cpu_s, row.neuron_s) == ("g", 1.0, 1.05)


def test_the_suites_legs_record_each_tests_thread_cpu_time_in_their_junit_xml(tmp_path: Path) -> None:
    # torch_suite.py's legs load suite_clock.py; the time is the test call's own
    import subprocess

    (tmp_path / "test_spin.py").write_text(
        "import time\n"
        "def test_spin():\n"
        "    end = time.thread_time() + 0.05\n"
        "    while time.thread_time() < end:\n"
        "        pass\n"
        "def test_sleep():\n"
        "    time.sleep(0.2)\n"
    )
    scripts = ROOT / "plugins" / "neuron" / "tests" / "scripts"
    junit = tmp_path / "out-cpu.xml"
    env = {"PYTHONPATH": str(scripts), "PATH": "/usr/bin:/bin"}
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "suite_clock", "--junitxml", str(junit),
         "test_spin.py"],
        cwd=tmp_path, env=env, check=True, capture_output=True,
    )  # fmt: skip
    times = bench.read_junit(junit, "cpu", "thread")
    spin = next(v for k, v in times.items() if k.endswith("test_spin"))
    sleep = next(v for k, v in times.items() if k.endswith("test_sleep"))
    assert spin[0] == "passed" and 0.05 <= spin[1] < 1.0
    assert sleep[0] == "passed" and sleep[1] < 0.05  # sleeping is not the test's work


def test_several_results_folders_are_runs_of_one_suite_judged_by_their_median(tmp_path: Path, capsys) -> None:
    # one run's ratio moves with the machine's load: the verdict rests on the median run, not on any one
    def run(name: str, neuron_s: float) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        _junit(folder / "f-cpu.xml", "f.TCPU", [("test_a_cpu", 10.0, "passed")])
        _junit(folder / "f-neuron.xml", "f.TPRIVATEUSE1", [("test_a_neuron", neuron_s, "passed")])
        return folder

    within = [run("a", 10.5), run("b", 12.0), run("c", 10.8)]  # 1.05x, 1.20x, 1.08x: median 1.08x
    assert bench.main([str(f) for f in within]) == 0
    assert "median of 3 runs (1.05x, 1.20x, 1.08x) 1.08x" in capsys.readouterr().out
    over = [run("d", 12.0), run("e", 11.5), run("f", 10.5)]  # median 1.15x
    assert bench.main([str(f) for f in over]) == 1
    out = tmp_path / "runs.json"
    assert bench.main([*(str(f) for f in over), "--json", str(out)]) == 1
    import json

    payload = json.loads(out.read_text())
    assert abs(payload["ratio"] - 1.15) < 1e-9 and len(payload["runs"]) == 3
    capsys.readouterr()
    assert bench.main([str(tmp_path / "a")]) == 0 and "median" not in capsys.readouterr().out  # one run: its own ratio


def test_best_of_runs_takes_each_test_at_its_fastest_run_on_each_device(tmp_path: Path, capsys) -> None:
    # load only adds time: per test and device, the fastest run; only tests every run passed both ways
    def run(name: str, cpu: list[tuple[str, float, str]], neuron: list[tuple[str, float, str]]) -> Path:
        _junit(tmp_path / name / "f-cpu.xml", "f.TCPU", cpu)
        _junit(tmp_path / name / "f-neuron.xml", "f.TPRIVATEUSE1", neuron)
        return tmp_path / name

    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a = run("a", [("test_x_cpu", 2.0, "passed"), ("test_y_cpu", 1.0, "passed")],
            [("test_x_neuron", 3.0, "passed"), ("test_y_neuron", 1.0, "passed")])  # fmt: skip
    b = run("b", [("test_x_cpu", 4.0, "passed"), ("test_y_cpu", 1.0, "passed")],
            [("test_x_neuron", 2.5, "passed"), ("test_y_neuron", 9.0, "failed")])  # fmt: skip
    best = bench.best_of_runs([bench.read_run(a), bench.read_run(b)])
    assert (best.same_tests, best.cpu_s, best.neuron_s) == (1, 2.0, 2.5)  # test_y failed in run b: left out
    out = tmp_path / "out.json"
    bench.main([str(a), str(b), "--json", str(out)])
    assert "each test at its fastest of the 2 runs (1 tests every run passed): cpu 2.0 s, neuron 2.5 s, 1.25x" in (
        capsys.readouterr().out
    )
    assert json.loads(out.read_text())["best_of_runs"]["ratio"] == 1.25


def test_repeat_without_a_suite_to_run_is_refused(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(SystemExit) as e:
        bench.main([str(tmp_path), "--repeat", "3"])
    assert e.value.code == 2
