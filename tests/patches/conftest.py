"""Fixtures for the torch patch series: an overlay built from it, and scenario runs.

Scenario runs (``scenarios.py``) start fresh interpreters: stock torch, and torch with
the overlay active. By default one interpreter per (torch, device) pair runs every
scenario, stock and patched side by side, because starting torch and the emulator costs
several seconds on shared CPUs. ``ACCEL_PATCH_TESTS_ISOLATE=1`` runs each scenario in an
interpreter of its own.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from accel_abstraction.patching.apply import write_overlay
from accel_abstraction.patching.series import installed_torch_root, load_series, torch_version_at

SCENARIOS = Path(__file__).with_name("scenarios.py")
TIMEOUT_S = 600


@pytest.fixture(scope="session")
def torch_root() -> Path:
    return installed_torch_root()


@pytest.fixture(scope="session")
def series(torch_root: Path):
    return load_series(torch_version_at(torch_root))


@pytest.fixture(scope="session")
def overlay(tmp_path_factory: pytest.TempPathFactory, series, torch_root: Path) -> Path:
    target = tmp_path_factory.mktemp("overlay") / "torch-overlay"
    write_overlay(series, torch_root, target)
    return target


def _run(command: list[str], cwd: Path) -> dict[str, Any]:
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("ACCEL_TORCH_OVERLAY", None)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"timed out after {TIMEOUT_S}s: {' '.join(command)}")
    if done.returncode != 0:
        pytest.fail(f"exit {done.returncode}: {' '.join(command)}\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class ScenarioRunner:
    """Runs scenario names on a device with stock and with patched torch; caches results."""

    def __init__(self, overlay: Path, cwd: Path) -> None:
        self.overlay = overlay
        self.cwd = cwd
        self.isolate = os.environ.get("ACCEL_PATCH_TESTS_ISOLATE") == "1"
        self._cache: dict[tuple[str, str, str], dict[str, Any]] = {}

    def _command(self, patched: bool, device: str, names: list[str]) -> list[str]:
        runner = ["-m", "accel_abstraction.patching.run", "--overlay", str(self.overlay)] if patched else []
        return [sys.executable, *runner, str(SCENARIOS), device, *names]

    def observe(self, device: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(stock observations, patched observations)`` of scenario ``name`` on ``device``."""
        if device == "neuron" and importlib.util.find_spec("accel_neuron") is None:
            pytest.skip("accel-neuron (the emulated neuron device) is not installed")
        if ("stock", device, name) not in self._cache:
            names = [name] if self.isolate else ["all"]
            jobs = {patched: self._command(patched, device, names) for patched in (False, True)}
            with ThreadPoolExecutor(max_workers=2) as pool:
                results = dict(zip(jobs, pool.map(lambda c: _run(c, self.cwd), jobs.values()), strict=True))
            for patched, observed in results.items():
                for scenario, value in observed.items():
                    self._cache[("patched" if patched else "stock", device, scenario)] = value
        return self._cache[("stock", device, name)], self._cache[("patched", device, name)]


def scenario_names() -> list[str]:
    """Names of the scenarios in ``scenarios.py`` (read from its source, without importing torch)."""
    tree = ast.parse(SCENARIOS.read_text(encoding="utf-8"))
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "scenario" for d in node.decorator_list)
    ]


@pytest.fixture(scope="session")
def scenarios(overlay: Path, tmp_path_factory: pytest.TempPathFactory) -> ScenarioRunner:
    return ScenarioRunner(overlay, tmp_path_factory.mktemp("scenario-cwd"))
