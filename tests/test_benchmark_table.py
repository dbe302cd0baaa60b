"""The README's benchmark table is generated from benchmarks/results.json, never typed by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_table_is_what_the_recorded_results_give() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "readme_table.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
