"""accel.log_metric: JSON lines to $ACCEL_METRICS_FILE, nothing without it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import accel_abstraction as accel
from accel_abstraction import metrics


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    metrics.close()
    yield
    metrics.close()


def test_writes_one_json_line_per_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.jsonl"
    monkeypatch.setenv("ACCEL_METRICS_FILE", str(path))
    accel.log_metric(step=0, loss=torch.tensor(1 / 3), step_time=0.25)
    accel.log_metric(step=1, loss=0.1 + 0.2, note="x")
    lines = [json.loads(line) for line in path.read_text().splitlines()]  # flushed per line: readable now
    facts = lines.pop(0)["run"]  # first, once: what the run computes on
    assert facts["backend"] == accel.backend().name and facts["torch"] == torch.__version__
    assert facts["device_name"] == accel.backend().device_name()
    assert lines == [
        {"step": 0, "loss": torch.tensor(1 / 3).item(), "step_time": 0.25},
        {"step": 1, "loss": 0.1 + 0.2, "note": "x"},
    ]
    assert lines[1]["loss"] == 0.30000000000000004  # exact: parity compares bit for bit


def test_is_a_no_op_without_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACCEL_METRICS_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    accel.log_metric(step=0, loss=1.0)
    assert list(tmp_path.iterdir()) == []


def test_rejects_values_it_cannot_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_METRICS_FILE", str(tmp_path / "m.jsonl"))
    with pytest.raises(TypeError, match=r"log_metric\(loss=\.\.\.\) takes numbers"):
        accel.log_metric(step=0, loss=[1.0])


def test_settings_are_declared_once_per_call_and_take_dtypes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.jsonl"
    monkeypatch.setenv("ACCEL_METRICS_FILE", str(path))
    accel.log_settings(seed=0, amp_dtype=torch.bfloat16, steps=3)
    accel.log_metric(step=0, loss=float("nan"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [next(iter(line)) for line in lines] == ["run", "settings", "step"]
    assert lines[1]["settings"] == {"seed": 0, "amp_dtype": "bfloat16", "steps": 3}
    assert lines[2]["loss"] != lines[2]["loss"]  # NaN is written, and read back, as NaN
    with pytest.raises(TypeError, match=r"log_settings\(lr=\.\.\.\) takes numbers"):
        accel.log_settings(lr=[0.1])
