"""accel parity end to end: runs per backend, the table, parity.json, the PNG and the exit code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from accel_abstraction.parity.compare import compare_runs
from accel_abstraction.parity.runs import BackendRun

from .conftest import PNG_MAGIC, REPO, TINY, parity


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_identical_runs_match_bitwise(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert parity(TINY, "--backends", "cpu,cpu", "--out", str(out), "--", "--steps", "5") == 0
    report = json.loads((out / "parity.json").read_text())
    assert report["passed"] is True
    assert [r["label"] for r in report["runs"]] == ["cpu", "cpu#2"]
    assert report["runs"][0]["env"] == {"ACCEL_BACKEND": "cpu"}  # the one line that changes
    assert report["runs"][0]["steps"] == [0, 1, 2, 3, 4]
    second = report["comparisons"][1]
    assert (
        second["bitwise"] is True and second["max_abs_diff"] == 0 and second["first_diverging_step"] is None
    )
    assert second["step_time_ratio"] > 0
    assert (out / "parity.png").read_bytes()[:8] == PNG_MAGIC
    text = capsys.readouterr().out
    assert "Parity of 'loss' per step (bitwise), reference 'cpu'" in text
    assert "match" in text


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_perturbed_run_diverges_at_the_right_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    flag = tmp_path / "perturb"
    code = parity(TINY, "--backends", "cpu,cpu", "--out", str(out), "--", "--perturb-file", str(flag))
    assert code == 1
    report = json.loads((out / "parity.json").read_text())
    assert report["passed"] is False
    second = report["comparisons"][1]
    assert second["bitwise"] is False
    assert second["first_diverging_step"] == 3 and second["first_exceeding_step"] == 3
    assert second["max_abs_diff"] == pytest.approx(1e-4, rel=1e-6)
    assert (out / "parity.png").read_bytes()[:8] == PNG_MAGIC
    assert "diverged" in capsys.readouterr().out

    # The same runs, within a tolerance wider than the perturbation, pass.
    runs = [
        BackendRun(
            r["label"],
            r["backend"],
            records=[{"step": s, "loss": v} for s, v in zip(r["steps"], r["loss"], strict=True)],
        )
        for r in report["runs"]
    ]
    assert compare_runs(runs, atol=2e-4).passed
    assert not compare_runs(runs, atol=5e-5).passed


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_failed_run_exits_2_and_is_reported(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert parity(TINY, "--backends", "cpu,cpu", "--out", str(out), "--no-plot", "--", "--fail") == 2
    report = json.loads((out / "parity.json").read_text())
    assert report["runs"][0]["returncode"] == 3
    assert "exited with code 3: tiny_script: failing on purpose" in report["runs"][0]["error"]
    assert "failing on purpose" in (out / "cpu.log").read_text()


def test_unavailable_backend_exits_2_without_running(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert parity(TINY, "--backends", "cpu,cuda", "--out", str(out), "--no-plot") == 2
    report = json.loads((out / "parity.json").read_text())
    cuda = report["runs"][1]
    assert cuda["returncode"] is None and cuda["error"].startswith("backend 'cuda' is not available: ")


def test_script_options_must_follow_a_double_dash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parity(TINY, "--backends", "cpu", "--steps", "3") == 2
    assert "arguments for the script go after '--'" in capsys.readouterr().err


def test_missing_plot_dependency_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_abstraction.parity.plot import PlotUnavailableError, plot_runs

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotUnavailableError, match=r"pip install 'accel-abstraction\[plot\]'"):
        plot_runs([], tmp_path / "p.png")


def test_compare_reports_missing_steps() -> None:
    ref = BackendRun("a", "cpu", records=[{"step": i, "loss": 1.0} for i in range(4)])
    short = BackendRun("b", "cpu", records=[{"step": i, "loss": 1.0} for i in range(3)])
    result = compare_runs([ref, short], atol=1.0)
    assert not result.passed
    assert result.comparisons[1].missing_steps == [3]


@pytest.mark.slow
def test_cpu_and_emulated_neuron_match_bitwise(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert parity(TINY, "--backends", "cpu,neuron", "--out", str(out)) == 0
    report = json.loads((out / "parity.json").read_text())
    neuron = report["runs"][1]
    assert neuron["env"] == {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}
    assert report["comparisons"][1]["bitwise"] is True
    assert (out / "parity.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.slow
def test_example_training_script_matches_on_emulated_neuron(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["--backends", "cpu,neuron", "--out", str(out), "--", "--steps", "8", "--sample", "0"]
    assert parity(str(REPO / "examples" / "train.py"), *args) == 0
    report = json.loads((out / "parity.json").read_text())
    assert report["comparisons"][1]["bitwise"] is True
    losses = report["runs"][0]["loss"]
    assert losses[-1] < losses[0]  # it learns
