"""Record a run, compare later: --record on cpu, --reference with emulated neuron, perturbed, mismatched."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import accel_abstraction as accel
from accel_abstraction.parity.compare import compare_runs
from accel_abstraction.parity.reference import load_reference, settings_mismatches

from .conftest import REPO, TINY, parity


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """tiny_script.py recorded on cpu (6 steps), as a later job would download it."""
    folder = tmp_path_factory.mktemp("recording")
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("ACCEL_")]:
            mp.delenv(key)
        ref = folder / "ref.json"
        assert parity(TINY, "--backends", "cpu", "--out", str(folder / "out"), "--no-plot", "--record", str(ref)) == 0  # fmt: skip
    yield ref


def test_recording_holds_what_a_later_comparison_needs(recorded: Path) -> None:
    doc = json.loads(recorded.read_text())
    assert (doc["schema"], doc["schema_version"]) == ("accel-parity", 3)
    assert doc["script_sha256"] == hashlib.sha256(Path(TINY).read_bytes()).hexdigest()
    assert doc["host"]["torch"] == torch.__version__ and doc["host"]["cpu_count"] == os.cpu_count()
    run = doc["runs"][0]
    assert run["facts"]["backend"] == "cpu" and run["facts"]["device_name"].startswith("CPU (")
    assert (run["facts"]["torch"], run["facts"]["accel"]) == (torch.__version__, accel.__version__)
    assert run["facts"]["default_dtype"] == "float32" and run["facts"]["amp_dtype"] == "bfloat16"
    assert run["settings"] == {"seed": 0, "steps": 6}
    assert [r["step"] for r in run["records"]] == list(range(6))
    assert all(r["step_time"] > 0 for r in run["records"]) and run["median_step_time"] > 0


@pytest.mark.slow
def test_emulated_neuron_matches_the_cpu_recording(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert parity(TINY, "--backends", "neuron", "--reference", str(recorded), "--out", str(out)) == 0
    text = capsys.readouterr().out
    assert "reference: cpu (recorded) = cpu on CPU (" in text
    assert "x-machine" in text and "a cross-machine ratio, not a benchmark" in text
    assert "settings differ" not in text
    report = json.loads((out / "parity.json").read_text())
    assert report["reference"] == "cpu (recorded)" and report["runs"][0]["recorded_from"] == str(recorded)
    assert report["reference_file"]["sha256"] == hashlib.sha256(recorded.read_bytes()).hexdigest()
    neuron = report["comparisons"][1]
    assert neuron["bitwise"] is True and neuron["passed"] is True and neuron["step_time_ratio"] > 0
    assert "emulated" in report["runs"][1]["facts"]["device_name"]


def test_perturbed_reference_fails_with_the_step_and_the_values(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(recorded.read_text())
    record = doc["runs"][0]["records"][3]
    original = record["loss"]
    record["loss"] = original * (1 + 1e-6)
    perturbed = tmp_path / "perturbed.json"
    perturbed.write_text(json.dumps(doc))
    out = tmp_path / "out"
    code = parity(TINY, "--backends", "cpu", "--reference", str(perturbed), "--out", str(out), "--no-plot")
    assert code == 1
    text = capsys.readouterr().out
    assert f"cpu: diverged at step 3: loss {original!r} vs reference {record['loss']!r}" in text
    assert json.loads((out / "parity.json").read_text())["comparisons"][1]["first_exceeding_step"] == 3
    # within a tolerance wider than the perturbation it passes (the same runs, compared again)
    runs = [load_reference(perturbed).run, load_reference(out / "parity.json", "cpu").run]
    assert compare_runs(runs, rtol=1e-5).passed and not compare_runs(runs, rtol=1e-7).passed


def test_mismatched_settings_are_reported_before_comparing(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = tmp_path / "tiny_script.py"
    shutil.copy(TINY, edited)
    with edited.open("a") as fh:
        fh.write("# edited after the recording\n")
    out = tmp_path / "out"
    args = ["--backends", "cpu", "--reference", str(recorded), "--reference-run", "cpu", "--out", str(out)]
    assert parity(str(edited), *args, "--no-plot", "--", "--steps", "4") == 1
    text = capsys.readouterr().out
    table = text.index("Parity of 'loss'")
    for line in [
        "settings differ from the reference: script hash (the script changed since the recording)",
        'settings differ from the reference: script arguments: reference [], now ["--steps", "4"]',
        "settings differ from the reference: cpu: 4 steps, the reference 6",
        "settings differ from the reference: cpu: declared steps 4, the reference 6",
    ]:
        assert 0 <= text.index(line) < table
    assert "cpu: stopped early: logged steps 0..3 (4), the reference steps 0..5 (6)" in text
    assert len(json.loads((out / "parity.json").read_text())["settings_mismatches"]) == 4


def test_committed_cpu_recording_of_the_example_is_usable() -> None:
    ref = load_reference(REPO / "examples" / "parity-reference-cpu.json")
    doc = ref.document
    assert doc["script"] == "examples/train.py" and doc["script_args"] == []
    assert ref.run.label == "cpu (recorded)" and ref.run.facts["backend"] == "cpu"
    assert ref.run.settings["steps"] == 80 and ref.run.settings["amp_dtype"] is None
    losses = [v for _, v in sorted(ref.run.series("loss").items())]
    assert len(losses) == 80 and all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.5 * losses[0]  # a training run: the loss falls to under half


def test_long_argument_lists_are_reported_by_what_differs(tmp_path: Path) -> None:
    args = ["config/train_shakespeare_char.py", "--compile=False", "--max_iters=10", "--eval_iters=1"]
    doc = {
        "schema_version": 2,
        "script_args": [*args, "--device=cpu"],
        "runs": [{"label": "cpu", "records": [{"step": 0, "loss": 1.0}]}],
    }
    (tmp_path / "ref.json").write_text(json.dumps(doc))
    ref = load_reference(tmp_path / "ref.json")
    assert settings_mismatches(ref, {"script_args": [*args, "--dtype=float32"]}) == [
        'script arguments: only in the reference ["--device=cpu"], only now ["--dtype=float32"]'
    ]
