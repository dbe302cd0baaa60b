"""Hostile inputs to `accel scan` / `accel port`: each ends in one clear message and an exit
code, never a traceback, a hang or a damaged file (issue 14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accel_abstraction import safe_io
from accel_abstraction.porting.__main__ import main

COUPLED = "import torch\nx = torch.zeros(1).cuda()\n"
PORTED = "import accel_abstraction as accel\nimport torch\nx = torch.zeros(1).to(accel.device())\n"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return tmp_path


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err


def test_deeply_nested_file_is_reported_and_the_others_are_scanned_and_ported(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree / "a.py").write_text(COUPLED)
    # 20000 chained operators: too deep for CPython 3.11+'s parser or for the analysis (3.10
    # parses it and the iterative scan may then succeed: either way, one line and no traceback)
    (tree / "deep.py").write_text("import torch\nx = torch.zeros(1).cuda()" + " + 1" * 20000 + "\n")
    (tree / "z.py").write_text(COUPLED)
    code = main(["scan", "."])
    out = capsys.readouterr()
    assert "a.py:2:5 ACC111" in out.out and "z.py:2:5 ACC111" in out.out
    assert "Traceback" not in out.err
    too_deep = "deep.py: too deeply nested to analyse" in out.err
    assert code == 1  # a.py's findings, and deep.py when it is too deep
    assert too_deep or "deep.py:2:5 ACC111" in out.out
    code = main(["port", "--write", "."])
    err = _err(capsys)
    assert "Traceback" not in err
    assert (tree / "a.py").read_text() == PORTED and (tree / "z.py").read_text() == PORTED
    if code == 1:
        assert "deep.py: too deeply nested" in err and "not written (1; each unchanged on disk): deep.py" in err


def test_port_write_in_a_read_only_folder_says_so(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree / "a.py").write_text(COUPLED)

    def refuse(*args: object, dir: str = "", **kwargs: object) -> tuple[int, str]:  # noqa: A002 - mkstemp's name
        raise PermissionError(13, "Permission denied", dir)

    monkeypatch.setattr(safe_io.tempfile, "mkstemp", refuse)
    assert main(["port", "--write", "a.py"]) == 1
    err = _err(capsys)
    assert "a.py: cannot write" in err and "Permission denied; the file is left unchanged" in err
    assert (tree / "a.py").read_text() == COUPLED


@pytest.mark.parametrize("where", ["missing/dir/r.txt", "."])
def test_unusable_output_path_fails_before_scanning(tree: Path, where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "a.py").write_text(COUPLED)
    scanned: list[object] = []
    monkeypatch.setattr("accel_abstraction.porting.cli.scan_paths", lambda *a, **k: scanned.append(a) or [])
    assert main(["scan", "-o", where, "a.py"]) == 2
    assert "--output" in _err(capsys)
    assert scanned == []


def test_fifo_in_the_tree_does_not_block(tree: Path) -> None:
    (tree / "a.py").write_text(COUPLED)
    os.mkfifo(tree / "pipe.py")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for command in (["scan", "."], ["port", "."], ["scan", "pipe.py"]):
        done = subprocess.run(
            [sys.executable, "-m", "accel_abstraction.porting", *command],
            cwd=tree, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert "Traceback" not in done.stderr
        if command[-1] == "pipe.py":
            assert done.returncode == 1 and "pipe.py is not a regular file" in done.stderr
        else:
            assert "pipe.py" not in done.stdout + done.stderr


def test_port_write_through_a_symlink_keeps_the_link(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "real").mkdir()
    (tree / "real" / "target.py").write_text(COUPLED)
    (tree / "link.py").symlink_to(tree / "real" / "target.py")
    assert main(["port", "--write", "link.py"]) == 0
    assert (tree / "link.py").is_symlink()
    assert (tree / "real" / "target.py").read_text() == PORTED
    assert list((tree / "real").iterdir()) == [tree / "real" / "target.py"]


def test_crash_on_one_file_is_summarised_and_leftover_temp_files_are_removed(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (tree / name).write_text(COUPLED)
    leftover = tree / ".a.py.k3j2x9.accel-port"  # what a SIGKILL between write and replace leaves
    leftover.write_text("partial")
    from accel_abstraction.porting import codemod

    real = codemod.port_source

    def flaky(source: str, path: str, *args: object, **kwargs: object) -> object:
        if path.endswith("b.py"):
            raise KeyError("boom")
        return real(source, path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(codemod, "port_source", flaky)
    assert main(["port", "--write", "."]) == 1
    err = _err(capsys)
    assert "b.py: internal error KeyError" in err
    assert "ported a.py" in err and "ported c.py" in err
    assert "not written (1; each unchanged on disk): b.py" in err
    assert f"removed {leftover}" in err and not leftover.exists()
    assert (tree / "b.py").read_text() == COUPLED and (tree / "c.py").read_text() == PORTED


def _notebook(*cells: tuple[str, str]) -> str:
    return json.dumps(
        {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
         "cells": [{"cell_type": kind, "metadata": {}, "source": src.splitlines(keepends=True)} for kind, src in cells]}
    )  # fmt: skip


def test_notebook_code_cells_are_scanned_with_cell_and_line_and_port_refuses(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook(
        ("markdown", "Runs on `torch.cuda`"),
        ("code", "!pip install torch\n%matplotlib inline\nimport torch"),
        ("code", "x = torch.zeros(1)\nx = x.cuda()"),
    )
    (tree / "nb.ipynb").write_text(nb)
    assert main(["scan", "nb.ipynb"]) == 1
    assert capsys.readouterr().out.splitlines() == ["nb.ipynb[cell 3]:2:5 ACC111 .cuda() moves to a CUDA device (.to(accel.device()))"]
    assert main(["port", "--write", "nb.ipynb"]) == 1
    assert "notebooks are scanned, not ported" in _err(capsys)
    assert (tree / "nb.ipynb").read_text() == nb
    (tree / "bad.ipynb").write_text("{not json")
    assert main(["scan", "bad.ipynb"]) == 1
    assert "bad.ipynb: cannot read: not a Jupyter notebook" in _err(capsys)


def test_syntax_error_without_trigger_words_fails_check(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "broken.py").write_text("def f(:\n    return 1\n")
    assert main(["scan", "--check", "broken.py"]) == 1
    assert "broken.py:1: cannot parse" in _err(capsys)


def test_unknown_encoding_cookie_is_refused_and_never_written(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "# coding: foobar\n" + COUPLED
    (tree / "enc.py").write_text(text)
    assert main(["port", "--write", "enc.py"]) == 1
    assert "unknown encoding" in _err(capsys)
    assert (tree / "enc.py").read_text() == text
    assert main(["scan", "enc.py"]) == 1


@pytest.mark.parametrize("config", ["nope.toml", "."])
def test_config_must_be_a_file(tree: Path, config: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "a.py").write_text(COUPLED)
    assert main(["scan", "--config", config, "a.py"]) == 2
    assert f"--config {config}" in _err(capsys)


@pytest.mark.parametrize("jobs", ["0", "-3", "x"])
def test_jobs_must_be_positive(tree: Path, jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["scan", f"--jobs={jobs}", "."])
    assert exit_info.value.code == 2
    assert "--jobs" in _err(capsys)


@pytest.mark.parametrize("problem", ["unreadable", "not-utf8"])
def test_unusable_pyproject_is_one_clear_error(
    tree: Path, problem: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree / "a.py").write_text(COUPLED)
    pyproject = tree / "pyproject.toml"
    if problem == "not-utf8":
        pyproject.write_bytes(b"[tool.accel.scan]\nignore = ['\xff']\n")
    else:
        request.getfixturevalue("unreadable_pyproject")  # tests/conftest.py
    for command in ("scan", "port"):
        assert main([command, "a.py"]) == 2
        err = _err(capsys)
        assert err.startswith(f"accel: error: {pyproject}"), err
        assert ("cannot read the configuration file" if problem == "unreadable" else "not UTF-8") in err
        assert "Traceback" not in err
