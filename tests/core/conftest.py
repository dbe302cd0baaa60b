"""Fixtures for the core's tests: a clean selection per test, fake plugin distributions, projects."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import accel_abstraction.plugins as plugins
import accel_abstraction.runtime as runtime
from accel_abstraction.testing.timeouts import scaled

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_selection(clean_accel_env: None) -> Iterator[None]:
    """Each test selects from scratch, with no ACCEL_* variable leaking in from the caller."""
    runtime.reset()
    yield
    runtime.reset()
    plugins.reset()


def make_plugin_dist(root: Path, name: str, source: str, dist: str | None = None) -> Path:
    """Write an installed-looking distribution ``dist`` with an ``accel_abstraction`` entry point ``name``.

    Puts ``<name>_plugin.py`` and ``<dist>-0.1.dist-info`` in ``root``; add ``root`` to
    ``PYTHONPATH`` of a subprocess and importlib.metadata finds the entry point.
    """
    dist = dist or f"fake-{name}"
    module = f"{name.replace('-', '_')}_plugin"
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[accel_abstraction]\n{name} = {module}\n")
    return root


def run_python(code: str, *, env: dict[str, str] | None = None, cwd: Path | None = None, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with only the given ACCEL_* variables set."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    full.update(env or {})
    if pythonpath is not None:
        full["PYTHONPATH"] = os.pathsep.join([str(pythonpath), full.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd or REPO,
        timeout=scaled(120),
    )


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``accel ARGS`` (as ``python -m accel_abstraction``) in a fresh interpreter."""
    code = f"import sys; from accel_abstraction.cli import main; sys.exit(main({list(args)!r}))"
    return run_python(code, env=env, cwd=cwd, pythonpath=pythonpath)


def cuda_unavailable_reason() -> str:
    """What the cuda backend's reason says on this machine (no GPU here): a CPU build of torch
    "was compiled without CUDA support"; a CUDA build (the registry's Linux wheels, 2.14 and 2.15
    here) "has CUDA X but sees no usable GPU"."""
    import torch

    return "without CUDA support" if torch.version.cuda is None else "but sees no usable GPU"
