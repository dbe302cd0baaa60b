"""accel parity --seeds: seeds derived per run, the statistical verdict, ensembles recorded and judged, --jobs."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from accel_abstraction.parity import stats
from accel_abstraction.parity.runs import BackendRun
from accel_abstraction.parity.seeding import ENV_VAR, derive

from .conftest import HERE, parity

NOISY = str(HERE / "noisy_script.py")
PROBE = str(HERE / "seed_probe.py")


def test_student_t_and_holm_match_their_tables() -> None:
    assert stats.student_t_sf2(2.776445105, 4) == pytest.approx(0.05, abs=1e-9)  # t_{0.975, 4}
    assert stats.student_t_sf2(2.228138852, 10) == pytest.approx(0.05, abs=1e-9)
    assert stats.student_t_sf2(63.65674, 1) == pytest.approx(0.01, abs=1e-7)
    assert stats.student_t_sf2(0.0, 3) == 1.0
    assert stats.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    one = stats.welch([1.0, 2.0, 3.0, 4.0, 5.0], [9.0])  # one run against a band: a prediction interval
    assert one.df == 4 and one.t == pytest.approx(6 / (1.5811388 * (1 + 1 / 5) ** 0.5), rel=1e-6)
    flat = stats.welch([1.0, 1.0, 1.0], [1.0, 1.0])
    assert flat.p == 1.0 and stats.welch([1.0, 1.0, 1.0], [1.0, 2.0 - 1.0, 1.5]).p < 1
    assert [len(w) for w in stats.windows(list(range(23)), 10)] == [3, 3, 3, 2, 2, 2, 2, 2, 2, 2]


def _probe(index: int, *extra: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    env.update({"ACCEL_BACKEND": "cpu", ENV_VAR: str(index)})
    command = [sys.executable, "-m", "accel_abstraction.parity.launch", PROBE]
    if extra:
        command = [sys.executable, "-m", "accel_abstraction.parity.leg", *extra, PROBE]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_seeding_call_is_derived_once_per_run(tmp_path: Path) -> None:
    plain, third = _probe(0), _probe(3)
    assert plain["torch.manual_seed"] == 1337 and plain["torch.Generator"] == 3 and plain["accel.manual_seed"] == 12
    assert third["torch.manual_seed"] == derive(1337, 3)  # once: torch seeding its device modules does not derive again
    assert third["torch.random.manual_seed"] == derive(7, 3)
    assert third["random.seed"] == random.Random(derive(5, 3, 64)).random()
    assert third["numpy.random.seed"] == numpy.random.RandomState(derive(9, 3, 32)).rand()
    assert third["torch.Generator"] == derive(3, 3)
    assert third["isinstance"] is True  # torch.Generator still accepts torch's own generators
    assert third["accel.manual_seed_all"] == derive(11, 3)
    assert third["accel.manual_seed"] == derive(12, 3)
    redirected = _probe(3, str(tmp_path / "redirect.json"))  # --redirect: torch.cuda.* served by the backend
    assert redirected["torch.cuda.manual_seed"] == derive(13, 3)


@pytest.mark.slow
def test_seeds_equivalent_then_diverged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "same"
    assert parity(NOISY, "--backends", "cpu,cpu", "--seeds", "3", "--out", str(out), "--no-plot", "--jobs", "2") == 0
    doc = json.loads((out / "parity.json").read_text())
    assert doc["verdict_mode"] == "statistical" and doc["seeds"]["count"] == 3
    assert [r["label"] for r in doc["runs"]][:3] == ["cpu", "cpu/seed1", "cpu/seed2"]
    finals = {r["loss"][-1] for r in doc["runs"][:3]}
    assert len(finals) == 3  # three seeds, three different runs of a script that hard-codes its seed
    assert doc["comparisons"][1]["verdict"] == "equivalent"
    assert "equivalent to 'cpu' over seeds" in capsys.readouterr().out

    out = tmp_path / "shifted"
    counter = tmp_path / "count"
    code = parity(
        NOISY, "--backends", "cpu,cpu", "--seeds", "3", "--out", str(out), "--no-plot", "--jobs", "1",
        "--", "--counter", str(counter), "--shift-after", "3",
    )  # fmt: skip
    assert code == 1
    doc = json.loads((out / "parity.json").read_text())
    second = doc["comparisons"][1]
    assert second["verdict"] == "diverged at step 0"
    window = second["statistics"]["windows"][0]
    assert window["diverged"] and window["p_holm"] <= 0.05 and window["mean"] - window["mean_reference"] > 0.4
    assert "Holm-adjusted" in capsys.readouterr().out


@pytest.mark.slow
def test_recorded_ensemble_judges_one_run_and_an_ensemble(tmp_path: Path) -> None:
    ref = tmp_path / "ref.json"
    assert parity(NOISY, "--backends", "cpu", "--seeds", "5", "--record", str(ref), "--out", str(tmp_path / "r"), "--no-plot", "--jobs", "2") == 0
    doc = json.loads(ref.read_text())
    assert doc["schema_version"] == 3 and [r["seed_index"] for r in doc["runs"]] == [0, 1, 2, 3, 4]
    assert doc["comparisons"][0]["statistics"]["noise"][0] > 0  # the run-to-run noise it saw
    # one run judged against the recorded band (another machine, another day)
    assert parity(NOISY, "--backends", "cpu", "--reference", str(ref), "--out", str(tmp_path / "a"), "--no-plot") == 0
    counter = tmp_path / "count"
    code = parity(
        NOISY, "--backends", "cpu", "--seeds", "3", "--reference", str(ref), "--out", str(tmp_path / "b"),
        "--no-plot", "--", "--counter", str(counter), "--shift-after", "0",
    )  # fmt: skip
    assert code == 1


def test_one_backend_compares_nothing_and_says_what_to_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parity(NOISY, "--backends", "cpu", "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "nothing would be compared" in err and "--reference FILE" in err and "--backends cpu,NAME" in err
    assert not (tmp_path / "parity.json").exists()  # refused before anything ran
    import accel_abstraction.emulation as emulation

    monkeypatch.setattr(emulation, "runnable_backends", lambda: ["cpu"])  # whatever the default list holds
    assert parity(NOISY, "--seeds", "3", "--out", str(tmp_path)) == 2
    assert "the default (every backend that runs here, emulated or not) is one backend (cpu)" in capsys.readouterr().err


def _runs(group: str, curves: list[list[float]]) -> list[BackendRun]:
    return [
        BackendRun(group if k == 0 else f"{group}/seed{k}", "cpu", group=group, seed_index=k,
                   records=[{"step": i, "loss": v} for i, v in enumerate(curve)])
        for k, curve in enumerate(curves)
    ]  # fmt: skip


def test_one_run_is_judged_against_a_recorded_band_and_the_table_shows_it() -> None:
    from rich.console import Console

    from accel_abstraction.parity.ensemble import compare_ensembles
    from accel_abstraction.parity.report import print_report

    rng = random.Random(0)
    band = [[2.0 - 0.05 * i + rng.gauss(0, 0.01) for i in range(20)] for _ in range(5)]
    inside = [2.0 - 0.05 * i + rng.gauss(0, 0.01) for i in range(20)]
    result = compare_ensembles([*_runs("cpu (recorded)", band), *_runs("neuron", [inside])])
    assert result.passed and result.comparisons[1].verdict == "equivalent"
    assert result.comparisons[1].statistics["reference_runs"] == 5 and result.comparisons[1].statistics["runs"] == 1
    outside = [v + (0.3 if i >= 10 else 0.0) for i, v in enumerate(inside)]  # parts from the band at step 10
    result = compare_ensembles([*_runs("cpu (recorded)", band), *_runs("neuron", [outside])])
    assert not result.passed and result.comparisons[1].first_exceeding_step == 10
    assert compare_ensembles([*_runs("cpu", band), *_runs("neuron", [outside])], atol=0.5).passed  # below the tolerance
    console = Console(width=200, record=True)
    print_report(result, [*_runs("cpu (recorded)", band), *_runs("neuron", [outside])], console)
    text = console.export_text()
    assert "over seeds (Welch t per window, Holm, alpha 0.05)" in text and "diverged at step 10" in text
