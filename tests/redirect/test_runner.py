"""`accel run` semantics, in-process: argv, exit status, module mode, JSON output, undo afterwards."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from accel_abstraction.redirect.context import active_redirects
from accel_abstraction.redirect.runner import RunOptions, run


def _script(tmp_path: Path, body: str, name: str = "script.py") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


def test_argv_exit_status_and_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _script(tmp_path, "import sys, torch\nprint(sys.argv[1:], torch.ones(1, device='cuda').device)\nsys.exit(3)\n")
    out = tmp_path / "r.json"
    status = run(RunOptions(str(script), ["--flag", "x"], report="none", output=str(out)))
    assert status == 3
    assert "['--flag', 'x'] cpu" in capsys.readouterr().out
    [site] = json.loads(out.read_text())["sites"]
    assert (site["line"], site["api"]) == (2, "torch.ones(device=cuda)")
    assert active_redirects() == [] and torch.cuda.is_available() is False  # undone after the run


def test_script_exception_is_shown_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _script(tmp_path, "raise ValueError('boom')\n")
    assert run(RunOptions(str(script), report="table")) == 1
    err = capsys.readouterr().err
    assert "ValueError: boom" in err and "no CUDA API was redirected" in err


def test_module_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = tmp_path / "pkg_redirect_test"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text("import torch\nprint('module', torch.cuda.device_count())\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert run(RunOptions("pkg_redirect_test.main", module=True, report="none")) == 0
    assert "module 1" in capsys.readouterr().out
