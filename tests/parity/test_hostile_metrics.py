"""Hostile metrics (issue 38): whatever a script writes as its metrics, or wherever
``ACCEL_METRICS_FILE`` points, `accel parity` and `accel.log_metric` end in one clear line.

The parsing layer is tested in-process (``take_json_lines``, ``record_problem``); one end to
end case per shape that needs a real script run is marked slow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accel_abstraction import metrics
from accel_abstraction.parity.metrics_lines import Follower, record_problem, take_json_lines
from accel_abstraction.parity.reference import load_reference
from accel_abstraction.parity.runs import BackendRun

from .conftest import parity


def _taken(*lines: str) -> tuple[BackendRun, list[dict[str, object]]]:
    run = BackendRun("cpu", "cpu", metrics_path="m.jsonl")
    return run, take_json_lines(run, list(lines), keep_steps=True)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"step": ' + "[" * 100000 + "]" * 100000 + "}", "nests JSON too deeply to read"),
        ('{"step": Infinity, "loss": 1.0}', "has step inf, not a whole number"),
        ('{"step": "x", "loss": 1.0}', "has step 'x', not a whole number"),
        ('{"step": true, "loss": 1.0}', "has step True, not a whole number"),
        ('{"step": 1, "loss": ' + "9" * 400 + "}", "has loss at step 1, an integer too large for a float"),
        ('{"step": 1, "loss": ' + "9" * 5000 + "}", "unreadable line in m.jsonl"),
        ('{"step": 1, "loss": [1]}', "has loss [1] at step 1, not a number"),
    ],
)
def test_a_bad_metrics_line_is_the_runs_error_not_a_traceback(line: str, said: str) -> None:
    run, new = _taken('{"step": 0, "loss": 2.0}', line)
    assert [r["step"] for r in new] == [0]
    assert said in run.error and "m.jsonl" in run.error
    assert run.series("loss") == {}  # no record of the run reached the comparison
    run.records = new
    assert run.series("loss") == {0: 2.0}


def test_record_problem_accepts_what_log_metric_writes() -> None:
    assert record_problem({"step": 3, "loss": 1.5, "step_time": 0.01, "note": "warmup", "lr": None, "nan": float("nan")}) == ""


def test_a_metrics_file_replaced_by_a_folder_is_said_once(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.mkdir()
    follower = Follower(path)
    assert follower.lines() == [] and follower.lines(final=True) == []
    assert follower.problem == f"{path} could not be read (a folder; did the script replace it?)"


def test_a_reference_with_a_400_digit_value_is_one_error(tmp_path: Path) -> None:
    doc = {
        "schema": "accel-parity",
        "schema_version": 2,
        "reference": "cpu",
        "metric": "loss",
        "runs": [{"label": "cpu", "backend": "cpu", "records": [{"step": 0, "loss": int("9" * 400)}]}],
    }
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps(doc))
    with pytest.raises(Exception, match="too large for a float") as info:
        load_reference(ref)
    from accel_abstraction.errors import AccelError

    assert isinstance(info.value, AccelError)


@pytest.fixture()
def sink(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    metrics.close()
    yield monkeypatch
    metrics.close()


@pytest.mark.parametrize("where", ["/dev/full", "folder"])
def test_log_metric_to_an_unwritable_file_is_one_accel_error(sink, tmp_path: Path, where: str) -> None:  # type: ignore[no-untyped-def]
    target = "/dev/full" if where == "/dev/full" else str(tmp_path)
    sink.setenv(metrics.ENV_VAR, target)
    with pytest.raises(metrics.MetricsFileError) as info:
        metrics.log_metric(step=0, loss=1.0)
    message = str(info.value)
    assert message.startswith(f"ACCEL_METRICS_FILE={target!r}: cannot write the metrics (")
    assert ("no space left on the device" in message) if where == "/dev/full" else ("Is a directory" in message)
    assert "\n" not in message
    metrics.close()  # nothing left to fail at exit


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("accel.log_metric(step=0, loss=10**400)\n", "too large for a float"),
        (
            "import os, shutil\naccel.log_metric(step=0, loss=1.0)\npath = os.environ['ACCEL_METRICS_FILE']\n"
            "os.remove(path)\nos.mkdir(path)\n",
            "did the script replace it?",
        ),
        (
            "import os\nopen(os.environ['ACCEL_METRICS_FILE'], 'a').write('{\"step\": Infinity, \"loss\": 1}\\n')\n",
            "has step inf, not a whole number",
        ),
    ],
    ids=["huge-int", "folder", "infinity-step"],
)
def test_parity_on_hostile_metrics_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, said: str
) -> None:
    script = tmp_path / "train.py"
    script.write_text("import accel_abstraction as accel\n" + body)
    code = parity(str(script), "--backends", "cpu,cpu", "--out", str(tmp_path / "out"), "--no-plot")
    out = capsys.readouterr()
    assert code != 0 and "Traceback" not in out.err
    assert said in " ".join((out.out + out.err).split())  # rich wraps long lines
