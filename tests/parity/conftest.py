"""Shared by the parity tests: a clean ``ACCEL_*`` environment and ``accel parity`` in-process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import accel_abstraction.plugins as plugins
import accel_abstraction.runtime as runtime
from accel_abstraction.cli import main

HERE = Path(__file__).parent
TINY = str(HERE / "tiny_script.py")
CUDA_STYLE = str(HERE / "cuda_style_script.py")
REPO = HERE.parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith("ACCEL_"):
            monkeypatch.delenv(key)
    yield
    runtime.reset()
    plugins.reset()


def parity(*args: str) -> int:
    """``accel parity --no-progress ARGS`` in this process; its exit status."""
    return main(["parity", "--no-progress", *args])
