"""Hostile sources and plugins for `accel scan` / `accel port` (issue 38): CR-only and mixed line
endings read like LF, malformed notebooks one line each, a raising plugin rule disabled for one
file, and a file saved during `accel port --write` never overwritten."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accel_abstraction import hookimpl
from accel_abstraction.plugins import register_plugin, reset
from accel_abstraction.porting.__main__ import main
from accel_abstraction.porting.rules import Rule
from accel_abstraction.testing.interrupt import interrupt_when_started

COUPLED = "import torch\nx = torch.zeros(1).cuda()\ntorch.cuda.synchronize()\n"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    reset()
    yield tmp_path
    reset()


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("newline", ["\r", "\r\n", "mixed"])
def test_cr_only_and_mixed_endings_scan_like_lf(tree: Path, newline: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "lf.py").write_text(COUPLED)
    lines = COUPLED.splitlines(keepends=True)
    if newline == "mixed":
        text = lines[0].replace("\n", "\r") + lines[1].replace("\n", "\r\n") + lines[2]
    else:
        text = COUPLED.replace("\n", newline)
    (tree / "other.py").write_bytes(text.encode())
    assert main(["scan", "lf.py"]) == 1  # findings: exit 1, as a linter
    want = [line.replace("lf.py", "other.py") for line in _lines(capsys.readouterr().out)]
    assert len(want) == 2  # ACC111 at 2:5, the synchronize at 3:1
    assert main(["scan", "other.py"]) == 1
    assert _lines(capsys.readouterr().out) == want


@pytest.mark.parametrize("newline", ["\r", "mixed"])
def test_cr_only_and_mixed_endings_port_like_lf_keeping_each_ending(tree: Path, newline: str) -> None:
    (tree / "lf.py").write_text(COUPLED)
    lines = COUPLED.splitlines(keepends=True)
    endings = ["\r", "\r", "\r"] if newline == "\r" else ["\r", "\r\n", "\n"]
    (tree / "other.py").write_bytes("".join(line.replace("\n", end) for line, end in zip(lines, endings, strict=True)).encode())
    assert main(["port", "--write", "lf.py", "other.py"]) == 0
    ported_lf = (tree / "lf.py").read_bytes()
    ported = (tree / "other.py").read_bytes()
    assert ported.replace(b"\r\n", b"\n").replace(b"\r", b"\n") == ported_lf
    assert b"torch.cuda" not in ported and b"\r" in ported
    if newline == "\r":
        assert b"\n" not in ported  # every line ends as the file's lines did


NOTEBOOKS = {
    "ints": {"cells": [{"cell_type": "code", "source": [1, 2, 3]}]},
    "dict-source": {"cells": [{"cell_type": "code", "source": {"a": 1}}]},
    "null-source": {"cells": [{"cell_type": "code", "source": None}]},
}


@pytest.mark.parametrize("shape", [*NOTEBOOKS, "deep", "truncated"])
def test_a_malformed_notebook_is_one_error_line_and_the_scan_goes_on(
    tree: Path, shape: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree / "a.py").write_text(COUPLED)
    if shape == "deep":
        text = '{"cells": ' + "[" * 100000 + "]" * 100000 + "}"
    elif shape == "truncated":
        text = '{"cells": [{"cell_type": "code", "source": "x'
    else:
        text = json.dumps(NOTEBOOKS[shape])
    (tree / "bad.ipynb").write_text(text)
    (tree / "z.py").write_text(COUPLED)
    assert main(["scan", "."]) == 1
    out = capsys.readouterr()
    assert "a.py:2:5" in out.out and "z.py:2:5" in out.out
    errors = [line for line in out.err.splitlines() if "bad.ipynb" in line]
    assert len(errors) == 1 and "Traceback" not in out.err, out.err
    assert "not a" in errors[0] and "Jupyter notebook" in errors[0]


class _Raising:
    """A plugin whose rule's matcher raises on the second call it gets."""

    def __init__(self, error: BaseException) -> None:
        self.calls = 0
        self.error = error

        def matcher(node: Any, scan: Any) -> None:
            self.calls += 1
            if self.calls == 2:
                raise self.error
            return None

        self.rule = Rule("BAD001", "manual", "a plugin's buggy rule", matcher=matcher)

    @hookimpl
    def accel_scan_rules(self, register: Any) -> None:
        register(self.rule)


@pytest.mark.parametrize("error", [ZeroDivisionError("boom"), SystemExit(5)])
def test_a_raising_plugin_rule_is_disabled_for_that_file_and_named(
    tree: Path, error: BaseException, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = _Raising(error)
    register_plugin(plugin, "buggyrules")
    (tree / "a.py").write_text(COUPLED)
    (tree / "b.py").write_text(COUPLED)
    assert main(["scan", "a.py", "b.py", "--jobs", "1"]) == 1
    out = capsys.readouterr()
    assert "a.py:2:5" in out.out and "b.py:2:5" in out.out  # the built-in rules' findings are all there
    notes = [line for line in out.err.splitlines() if "BAD001" in line]
    assert notes == [
        f"accel scan: a.py:2: rule BAD001 of plugin 'buggyrules' raised {type(error).__name__}: {error}; "
        "the rule is disabled for this file (report it to the plugin's authors)"
    ]
    assert "Traceback" not in out.err


def test_a_raising_plugin_rule_leaves_the_file_unported_and_named(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    register_plugin(_Raising(KeyError("k")), "buggyrules")
    (tree / "a.py").write_text(COUPLED)
    assert main(["port", "--write", "a.py"]) == 1
    err = capsys.readouterr().err
    assert "rule BAD001 of plugin 'buggyrules' raised KeyError" in err and "file left unchanged" in err
    assert "internal error" not in err and (tree / "a.py").read_text() == COUPLED


class _Saver:
    """A plugin rule that, while the port reads ``target``, saves the user's edit to it: the
    window between the port's read and its write, made certain."""

    def __init__(self, target: Path, edit: str) -> None:
        self.target, self.edit, self.done = target, edit, False

        def matcher(node: Any, scan: Any) -> None:
            if not self.done and Path(scan.path).name == self.target.name:
                self.done = True
                self.target.write_text(self.edit)
            return None

        self.rule = Rule("SAVE001", "manual", "saves the file", matcher=matcher)

    @hookimpl
    def accel_scan_rules(self, register: Any) -> None:
        register(self.rule)


@pytest.mark.parametrize("link", [False, True])
def test_port_write_never_replaces_a_file_saved_since_it_was_read(
    tree: Path, link: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    edit = COUPLED + "y = 'the user saved this line'\n"
    register_plugin(_Saver(tree / "a.py", edit), "saver")
    (tree / "a.py").write_text(COUPLED)
    (tree / "b.py").write_text(COUPLED)
    args = ["port", "--write", "a.py", "b.py"]
    if link:  # a hard-linked file is overwritten in place with --follow-links: checked the same way
        os.link(tree / "a.py", tree / "alias.py")
        args.append("--follow-links")
    assert main(args) == 1
    err = capsys.readouterr().err
    assert (tree / "a.py").read_text() == edit  # the user's save is kept
    assert "torch.cuda" not in (tree / "b.py").read_text()  # the other file is ported
    lines = [line for line in err.splitlines() if "changed after it was read" in line]
    assert len(lines) == 1 and "a.py" in lines[0] and "not written" in lines[0], err


@pytest.mark.slow
def test_sigterm_stops_port_write_promptly_and_every_file_is_whole(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(300):
        (src / f"m{i:03d}.py").write_text(COUPLED)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    stop = interrupt_when_started(
        [sys.executable, "-m", "accel_abstraction", "port", "--write", "--jobs", "2", str(src)],
        lambda: any("torch.cuda" not in p.read_text() for p in src.glob("*.py")),  # a file written: mid-port
        cwd=tmp_path, env=env, wait_s=60, grace_s=30,
    )  # fmt: skip
    assert not stop.hung, "accel port --write did not stop within 30 s of SIGTERM"
    assert not stop.group_left, "a worker of accel port was left running"
    err = stop.stderr
    assert stop.returncode != 0 and "Traceback" not in err
    assert "stopped by SIGTERM; each file is either ported or unchanged" in err
    ported = (tmp_path / "ref.py")
    ported.write_text(COUPLED)
    assert main(["port", "--write", str(ported)]) == 0
    for path in src.glob("*.py"):
        assert path.read_text() in (COUPLED, ported.read_text()), path
