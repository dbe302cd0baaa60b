"""Hostile inputs to `accel run` end in one clear line, checked before the script runs; the script's exit status is kept.

Issue 14, items 9 and 10: ``-o`` into a missing directory or onto a directory, a report that
cannot be written at the end, a directory without ``__main__.py``, ``-m`` of a module that
does not exist or of a package without ``__main__``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from accel_abstraction.redirect.cli import main


def _script(tmp_path: Path, body: str) -> tuple[Path, Path]:
    """A script that leaves a marker file when it runs."""
    marker = tmp_path / "ran"
    script = tmp_path / "script.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n{body}")
    return script, marker


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("accel: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("where", ["missing_dir", "directory"])
def test_output_path_is_checked_before_the_script_runs(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    script, marker = _script(tmp_path, "")
    target = str(tmp_path / "no" / "such" / "r.json") if where == "missing_dir" else str(tmp_path)
    assert main(["-o", target, str(script)]) == 2
    line = _one_error_line(capsys)
    assert target in line and ("does not exist" in line or "is a directory" in line)
    assert not marker.exists()  # nothing ran


def test_a_report_that_cannot_be_written_at_the_end_keeps_the_scripts_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    script, _ = _script(tmp_path, f"import shutil, sys\nshutil.rmtree({str(out_dir)!r})\nsys.exit(7)\n")
    assert main(["--report", "none", "-o", str(out_dir / "r.json"), str(script)]) == 7
    err = capsys.readouterr().err
    assert "the JSON report could not be written" in err and "Traceback" not in err


def test_directory_without_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "app").mkdir()
    assert main([str(tmp_path / "app")]) == 2
    assert "without __main__.py" in _one_error_line(capsys)


def test_directory_with_main_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text("import torch\nprint('app on', torch.zeros(1, device='cuda').device)\n")
    assert main(["--report", "none", str(app)]) == 0
    assert "app on cpu" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["no.such.module", "no_such_module_xyz"])
def test_missing_module(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-m", name]) == 2
    line = _one_error_line(capsys)
    assert repr(name) in line and "accel run -m" in line


def test_package_without_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = tmp_path / "pkg_without_main_xyz"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "pkg_without_main_xyz"]) == 2
    assert "package without __main__" in _one_error_line(capsys)


def test_missing_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope.py")]) == 2
    assert "does not exist" in _one_error_line(capsys)
    assert os.environ.get("ACCEL_REDIRECT") is None
