"""Fixtures shared by the test packages under ``tests/``."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def unreadable_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``pyproject.toml`` is unreadable during the test: opening one to read raises ``PermissionError``.

    What ``chmod 000`` does for a non-root user (root reads through it, so tests cannot chmod);
    writing one still works. A parametrized test that needs it for one case only:
    ``request.getfixturevalue("unreadable_pyproject")``.
    """
    real_open = Path.open

    def denied(self: Path, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        mode = str(args[0] if args else kwargs.get("mode", "r"))
        if self.name == "pyproject.toml" and not set(mode) & set("wax+"):
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", denied)


@pytest.fixture
def fresh_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of a module not imported yet (``VALUE = 1``, ``answer()`` -> ``"original"``), importable during the test."""
    name = f"accel_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n\n\ndef answer():\n    return 'original'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)
