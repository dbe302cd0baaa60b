"""The test tiers (conftest.py at the repository root): a file marked ``conformance`` is not even
collected where ``-m`` deselects every test it could hold, and is collected where ``-m`` may select one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from accel_abstraction.testing.timeouts import scaled

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def _collect(tmp_path: Path, marks: str, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text((REPO / "conftest.py").read_text())
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nmarkers = ["slow: s", "conformance: c", "gpu: g"]\n'
    )
    (tmp_path / "test_tier_file.py").write_text(body)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marks],
        cwd=tmp_path, capture_output=True, text=True, timeout=scaled(120),
    )


# collecting the file fails loudly, so "collected" is visible as an error and "left out" as none
CONFORMANCE_FILE = """
import pytest
pytestmark = pytest.mark.conformance
raise SystemExit("imported")

def test_one():
    pass
"""


@pytest.mark.parametrize(
    ("marks", "imported"),
    [
        ("not slow and not conformance", False),
        ("not conformance", False),
        ("gpu and not conformance", False),
        ("slow", True),  # a test of the file may be marked slow (the bf16 legs are)
        ("conformance", True),
        ("slow or conformance", True),
        ("conformance and gpu", True),  # a test of the file may carry gpu: the file must be read
        ("not gpu", True),
    ],
)
def test_a_conformance_file_is_collected_only_where_it_may_be_selected(tmp_path: Path, marks: str, imported: bool) -> None:
    proc = _collect(tmp_path, marks, CONFORMANCE_FILE)
    output = proc.stdout + proc.stderr
    assert ("imported" in output) is imported, output
    if not imported:
        assert "1 file(s) of a deselected tier not collected (-m): test_tier_file.py" in output


def test_an_unmarked_file_is_always_collected(tmp_path: Path) -> None:
    proc = _collect(tmp_path, "not slow and not conformance", "def test_one():\n    pass\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_tier_file.py::test_one" in proc.stdout
