"""The emulation rule with the real neuron plugin: a user's pytest file and ``accel parity`` agree.

With no ``ACCEL_NEURON_EMULATE`` set, ``pytest --accel-backend=cpu,neuron`` runs the neuron
leg on the CPU emulation (it skipped every neuron test before), and ``accel parity``'s
default backend list holds ``neuron``, emulated, for the same reason. ``ACCEL_NEURON_EMULATE=0``
turns the emulation off for both, with the plugin's reason and hint.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

USER_TEST = """
import torch

def test_ones(accel_device):
    assert (torch.ones(3, device=accel_device) * 2).sum().item() == 6
    assert accel_device.type in ("cpu", "neuron")
"""


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    return {**env, **extra}


def _pytest(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_user.py").write_text(USER_TEST)
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--accel-backend=cpu,neuron", "test_user.py"]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def _parity_view(env: dict[str, str]) -> str:
    code = (
        "from accel_abstraction.emulation import backend_env\n"
        "from accel_abstraction.parity.cli import _backends\n"
        "print(_backends(None), backend_env('neuron'))\n"
    )
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, check=True).stdout


@pytest.mark.slow
def test_pytest_and_accel_parity_agree_that_neuron_runs_emulated(tmp_path: Path) -> None:
    env = _clean_env(TORCH_EXTENSIONS_DIR=os.environ.get("TORCH_EXTENSIONS_DIR", ""))
    result = _pytest(tmp_path, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    view = _parity_view(env)
    assert "['cpu', 'neuron']" in view and "'ACCEL_NEURON_EMULATE': '1'" in view, view


@pytest.mark.slow
def test_emulate_0_keeps_neuron_off_for_both_with_the_same_hint(tmp_path: Path) -> None:
    env = _clean_env(ACCEL_NEURON_EMULATE="0", TORCH_EXTENSIONS_DIR=os.environ.get("TORCH_EXTENSIONS_DIR", ""))
    result = _pytest(tmp_path, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    hint = "set ACCEL_NEURON_EMULATE=1 to run on the CPU emulation"
    assert "backend 'neuron' is not available: torch_neuronx (AWS TorchNeuron) is not installed. To fix:" in result.stdout
    assert hint in result.stdout
    view = _parity_view(env)
    assert "['cpu']" in view and hint in view, view
