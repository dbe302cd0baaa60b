"""Helpers for the integration tests: run a script in a fresh interpreter with only some ACCEL_* set."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from accel_abstraction.testing import ports
from accel_abstraction.testing.timeouts import scaled

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
    # a session of its own: on timeout the whole group goes (Lightning's DDP ranks are grandchildren)
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    try:
        limit = scaled(timeout)
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"timed out after {limit:.0f} s: {args}\n{err[-4000:]}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def free_port() -> str:
    """A TCP port free on 127.0.0.1, as MASTER_PORT takes it."""
    return str(ports.free_port())


def last_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON object a script printed last; fails with the script's stderr when it did not run."""
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
