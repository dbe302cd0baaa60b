"""``accel patches run SCRIPT``: a script run with the overlay active, its argv and exit status its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accel_abstraction.patching.cli import main as patches_main

SCRIPT = """
import json, sys
import torch.amp.grad_scaler as gs
json.dump({"grad_scaler": gs.__file__, "argv": sys.argv}, open(sys.argv[1], "w"))
sys.exit(3)
"""


@pytest.mark.slow
def test_patches_run_activates_the_overlay_and_returns_the_scripts_status(overlay: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    report = tmp_path / "report.json"
    assert patches_main(["run", "--target", str(overlay), str(script), str(report), "--its", "args"]) == 3
    seen = json.loads(report.read_text())
    assert seen["grad_scaler"] == str(overlay.resolve() / "torch/amp/grad_scaler.py")
    assert seen["argv"] == [str(script), str(report), "--its", "args"]


def test_patches_run_without_a_script_says_what_to_give(capsys: pytest.CaptureFixture[str]) -> None:
    assert patches_main(["run"]) == 2
    assert capsys.readouterr().err.startswith("accel: error: accel patches run: give a script")
