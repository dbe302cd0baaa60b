"""benchmarks/harness.py measures what it says: import costs of installed (compiled) packages, paired in one process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import harness  # noqa: E402


def test_ensure_bytecode_compiles_a_package_as_an_install_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an editable install under PYTHONDONTWRITEBYTECODE=1 has no __pycache__: every fresh
    # interpreter compiled accel-abstraction's source (~20 ms) while torch loaded its .pyc
    pkg = tmp_path / "benchpkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("X = 1\n")
    (pkg / "sub" / "__init__.py").write_text("Y = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    assert harness.ensure_bytecode(["benchpkg", "no_such_package_here"]) == ["no_such_package_here"]
    tag = sys.implementation.cache_tag
    assert (pkg / "__pycache__" / f"__init__.{tag}.pyc").is_file()
    assert (pkg / "sub" / "__pycache__" / f"__init__.{tag}.pyc").is_file()


def test_compare_processes_reports_base_plus_extra_over_base() -> None:
    # base and extra run in the same fresh interpreter; the ratio is (base + extra) / base
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
    result = harness.compare_processes("spin", spin.format(s=0.05), spin.format(s=0.05), rounds=2)
    assert len(result.cpu_ratios) == 2  # the warm-up interpreter is not counted
    assert all(1.8 < r < 2.5 for r in result.cpu_ratios), result.cpu_ratios
    assert result.unit == "ms" and 90 < result.ours_ns < 150 and 45 < result.direct_ns < 80


def test_compare_pairs_reports_block_medians_of_per_pair_ratios() -> None:
    # ours spins twice as long as direct: every pair's ratio is ~2, and 20 pairs in blocks of 5 give 4 rounds
    import time

    def spin(seconds: float) -> None:
        t = time.thread_time()
        while time.thread_time() - t < seconds:
            pass

    case = harness.Case("spin", lambda: spin(0.004), lambda: spin(0.002))
    result = harness.compare_pairs(case, pairs=20, block=5, warm_up=1)
    assert len(result.cpu_ratios) == 4 and len(result.wall_ratios) == 4
    assert all(1.7 < r < 2.4 for r in result.cpu_ratios), result.cpu_ratios
    assert 3.5e6 < result.ours_ns < 6e6 and 1.7e6 < result.direct_ns < 3e6
