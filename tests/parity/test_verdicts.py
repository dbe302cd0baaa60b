"""Honest verdicts: NaN/inf never match, a run that stops early or logs nothing fails with the reason."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from accel_abstraction.parity.compare import compare_runs
from accel_abstraction.parity.runs import BackendRun

from .conftest import TINY, parity

NAN, INF = math.nan, math.inf


def run(label: str, values: list[float], **settings: object) -> BackendRun:
    return BackendRun(
        label, "cpu", records=[{"step": i, "loss": v} for i, v in enumerate(values)], settings=dict(settings)
    )


def test_all_nan_runs_never_match_whatever_the_tolerance() -> None:
    # issue 14: two all-NaN runs were a "match" (exit 0), even with --rtol
    for rtol in (0.0, 1e-2, 1e9):
        result = compare_runs([run("a", [NAN] * 3), run("b", [NAN] * 3)], rtol=rtol, atol=rtol)
        assert not result.passed
        assert [c.passed for c in result.comparisons] == [False, False]  # the reference itself too
        assert result.comparisons[0].problems[0].startswith("loss is nan at step 0 (3 non-finite step(s))")
        assert result.comparisons[1].verdict == "nan at step 0"


def test_non_finite_never_matches_a_finite_reference_even_when_allowed() -> None:
    for bad in (NAN, INF, -INF):
        result = compare_runs([run("a", [1.0, 2.0]), run("b", [1.0, bad])], rtol=1e9, allow_nonfinite=True)
        b = result.comparisons[1]
        assert not b.passed and b.first_exceeding_step == 1
        assert f"diverged at step 1: loss {bad!r} vs reference 2.0" in " ".join(b.problems)
    # and the other way round: a NaN reference against a finite run
    result = compare_runs([run("a", [1.0, NAN]), run("b", [1.0, 2.0])], allow_nonfinite=True)
    assert not result.comparisons[1].passed


def test_the_same_non_finite_value_in_both_passes_only_when_allowed() -> None:
    same = [run("a", [1.0, NAN, INF]), run("b", [1.0, NAN, INF])]
    assert not compare_runs(same).passed
    allowed = compare_runs(same, allow_nonfinite=True)
    assert allowed.passed and allowed.comparisons[1].bitwise
    assert allowed.comparisons[1].first_nonfinite_step == 1  # still reported
    opposite = [run("a", [INF]), run("b", [-INF])]
    assert not compare_runs(opposite, allow_nonfinite=True).passed


def test_fewer_missing_or_extra_steps_fail_with_the_reason() -> None:
    ref = run("a", [1.0] * 5)
    early = compare_runs([ref, run("b", [1.0] * 3)], atol=1.0).comparisons[1]
    assert early.problems == ["stopped early: logged steps 0..2 (3), the reference steps 0..4 (5)"]
    assert early.verdict == "stopped early (3/5 steps)"
    gap = BackendRun("c", "cpu", records=[{"step": s, "loss": 1.0} for s in (0, 1, 3, 4, 5)])
    c = compare_runs([ref, gap]).comparisons[1]
    assert c.problems == [
        "missing step(s) 2 that the reference logged",
        "logged step(s) 5 that the reference did not",
    ]


def test_a_run_short_of_its_declared_steps_stopped_early_even_alone() -> None:
    result = compare_runs([run("a", [1.0, 0.5], steps=6)])
    assert result.comparisons[0].problems == ["stopped early: logged 2 of the 6 steps it declared"]


def test_perturbed_value_is_named_with_step_and_both_values() -> None:
    b = compare_runs([run("a", [1.0, 2.0, 3.0]), run("b", [1.0, 2.0, 3.0001])], rtol=1e-6).comparisons[1]
    assert b.problems == [
        "diverged at step 2: loss 3.0001 vs reference 3.0 (|diff| 0.0001 > 3e-06 = atol 0 + rtol 1e-06 * |reference|)"
    ]


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_all_nan_script_exits_1_with_the_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = parity(TINY, "--backends", "cpu,cpu", "--out", str(out), "--no-plot", "--", "--nan-from", "0")
    assert code == 1
    text = capsys.readouterr().out
    assert "cpu: loss is nan at step 0 (6 non-finite step(s)): NaN/inf never match" in text
    report = json.loads((out / "parity.json").read_text())  # strict JSON: NaN written as a string
    assert report["passed"] is False and report["runs"][0]["loss"][0] == "NaN"
    assert report["comparisons"][0]["first_nonfinite_step"] == 0


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_script_that_stops_early_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert parity(TINY, "--backends", "cpu,cpu", "--out", str(out), "--no-plot", "--", "--stop-after", "3") == 1
    assert "cpu: stopped early: logged 3 of the 6 steps it declared" in capsys.readouterr().out


def test_script_that_logs_nothing_fails(tmp_path: Path) -> None:
    script = tmp_path / "silent.py"
    script.write_text("print('trained, but logged nothing')\n")
    out = tmp_path / "out"
    assert parity(str(script), "--backends", "cpu,cpu", "--out", str(out), "--no-plot") == 2
    error = json.loads((out / "parity.json").read_text())["runs"][0]["error"]
    assert error.startswith("logged no metrics (does the script call accel.log_metric?")
    code = parity(str(script), "--backends", "cpu,cpu", "--out", str(out), "--no-plot", "--metric", r"it (?P<step>\d+) (?P<loss>\S+)")  # fmt: skip
    assert code == 2
    error = json.loads((out / "parity.json").read_text())["runs"][0]["error"]
    assert (
        error.endswith("(last line: 'trained, but logged nothing')")
        and "no line of its output matched" in error
    )
