"""Fixtures for the redirect tests: the cpu backend selected, no redirect left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import accel_abstraction.plugins as plugins
import accel_abstraction.runtime as runtime
from accel_abstraction.redirect import context

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CUDA_SCRIPT = HERE / "cuda_script.py"
CPU_SCRIPT = HERE / "cpu_script.py"


@pytest.fixture(autouse=True)
def cpu_selected(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith("ACCEL_"):
            monkeypatch.delenv(key)
    runtime.reset()
    runtime.use("cpu")
    yield
    leftover = context._active
    if leftover is not None:  # a failed test must not leave torch patched for the next one
        leftover.patcher.undo()
        context._active = None
    runtime.reset()
    plugins.reset()
    assert leftover is None, "a test left a CUDA redirect installed"


def run(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python args...`` from the repository root with only the given ACCEL_* variables."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    full.update(env)
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=full, capture_output=True, text=True, timeout=timeout
    )


def losses(stdout: str) -> list[str]:
    """The loss lines a training script printed."""
    return [line for line in stdout.splitlines() if "loss" in line]


def marked_sites(path: Path) -> set[tuple[int, str]]:
    """``(line, api)`` for every ``# site: a; b`` comment of ``path``."""
    out = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if "  # site: " in line:  # code, then two spaces: not the docstring
            for api in line.split("  # site: ", 1)[1].split(";"):
                out.add((number, api.strip()))
    return out
