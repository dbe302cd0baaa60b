"""``accel test``: the bundled self-test runs cpu and every backend that runs here, and says so in a few lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from accel_abstraction.cli import main
from accel_abstraction.selftest import SCRIPT


def test_the_script_ships_inside_the_package() -> None:
    import accel_abstraction

    assert SCRIPT.is_file() and SCRIPT.parent == Path(accel_abstraction.__file__).parent / "selftest"


@pytest.mark.slow
def test_accel_test_passes_on_cpu_and_the_emulated_neuron_from_any_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    code = "import sys; from accel_abstraction.cli import main; sys.exit(main(['test']))"
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "accel test: a tiny MLP, 12 steps, on cpu, neuron"
    assert lines[1].split()[:3] == ["cpu", "reference:", "final"]
    assert lines[2].split() == ["neuron*", "match,", "bit", "for", "bit"]
    assert lines[-1] == "accel test: passed on 2 backend(s)"
    assert list(tmp_path.iterdir()) == []  # nothing left behind without --keep


@pytest.mark.slow
def test_a_backend_that_cannot_run_fails_the_self_test_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["test", "--backends", "cuda", "--steps", "3", "--keep", "runs"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[2].split()[:2] == ["cuda", "FAILED:"] and "backend 'cuda' is not available:" in out[2]
    assert out[-1].startswith("accel test: FAILED (") and "runs/cpu.log" in out[-1]
    assert (tmp_path / "runs" / "metrics-cpu.jsonl").is_file()
