"""Helpers for the integration tests: run a script in a fresh interpreter with only some ACCEL_* set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

#: The emulated neuron device, selected by configuration only.
NEURON_ENV = {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}


def run_python(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 420) -> subprocess.CompletedProcess[str]:
    """``python args...`` in ``cwd`` with the caller's environment minus every ACCEL_* and
    ACCELERATE_* variable, plus ``env``; single-threaded for bitwise-stable losses."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_", "ACCELERATE_"))}
    full.update({"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"})
    full.update(env)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)


def last_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON object a script printed last; fails with the script's stderr when it did not run."""
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
