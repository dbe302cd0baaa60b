"""Fixtures shared by the test packages under ``tests/``."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def clean_accel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``ACCEL_*`` variable of the caller's environment leaks into the test (restored after it).

    Not autouse: a test package opts in through an autouse fixture of its own that
    requests it, so tests elsewhere see the environment they always saw.
    """
    for key in list(os.environ):
        if key.startswith("ACCEL_"):
            monkeypatch.delenv(key)
