"""Fixtures for the neuron plugin tests.

`neuron_emulator` installs the CPU emulation of the neuron device in the test
process. Installing is irreversible, so the whole session shares it; it is
only installed when a test asks for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch


@pytest.fixture(scope="session")
def neuron_emulator() -> torch.device:
    """Install the emulator (once per session) and return the `neuron` device."""
    from accel_neuron import emulator

    emulator.install()
    return torch.device("neuron")


@pytest.fixture
def run_python():
    """Run a Python snippet in a fresh interpreter; returns the CompletedProcess."""

    def run(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )

    return run
