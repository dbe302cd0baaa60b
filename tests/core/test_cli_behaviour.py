"""The `accel` command behaves like its neighbours: `--version`, versions in `accel info`, plain help
texts, and output failures (a closed pipe, a full disk, a closed stream) that end in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from accel_abstraction.cli import main
from accel_abstraction.commands import BUILTIN_COMMANDS
from accel_abstraction.exits import EXIT_BROKEN_PIPE, EXIT_ERROR

COUPLED = "import torch\nx = torch.ones(2).cuda()\n"


def test_version_prints_the_installed_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"accel {version('accel-abstraction')}"


def test_info_prints_each_capability_row_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    firsts = [line.strip("│┃ ").split("│")[0].strip() for line in capsys.readouterr().out.splitlines()]
    for key in ("supports", "unsupported", "compile backend", "memory statistics", "amp dtype", "dist backend"):
        assert firsts.count(key) == 1, (key, firsts)


def test_info_shows_python_platform_and_package_versions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    system = report["system"]
    assert system["accel-abstraction"] == version("accel-abstraction")
    assert system["torch"] == version("torch")
    assert system["Python"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}.")
    assert system["platform"]
    assert {p["name"]: p["version"] for p in report["plugins"]}["cpu"] == version("accel-cpu")
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert "Python" in text and version("accel-abstraction") in text


def _help_texts() -> list[list[str]]:
    commands = [[spec.name] for spec in BUILTIN_COMMANDS]
    return [[], *commands, *(["patches", action] for action in ("list", "check", "apply", "revert"))]


@pytest.mark.parametrize("argv", _help_texts(), ids=lambda argv: " ".join(argv) or "accel")
def test_help_texts_show_no_rest_markup(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: accel")
    assert "``" not in out


# ------------------------------------------------------------------ output failures


#: A cheap run of each built-in command that writes to stdout (run in a folder holding train.py).
WRITERS = {
    "info": ["info"],
    "info --json": ["info", "--json"],
    "scan": ["scan", "train.py"],
    "port": ["port", "train.py"],
    "run --report json": ["run", "--report", "json", "train.py"],
    "patches list": ["patches", "list"],
}


def _accel(args: list[str], tmp: Path, **kwargs: object) -> subprocess.Popen[bytes]:
    (tmp / "train.py").write_text(COUPLED)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    code = "from accel_abstraction.cli import run; run()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=tmp, env=env, stderr=subprocess.PIPE, **kwargs  # type: ignore[call-overload]
    )


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_reader_that_goes_away_ends_the_command_quietly(name: str, tmp_path: Path) -> None:
    # `accel info --json | head -c1`: the reader is gone before the command writes
    proc = _accel(WRITERS[name], tmp_path, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()
    code, err = _finish(proc)
    assert (code, err) == (EXIT_BROKEN_PIPE, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("name", list(WRITERS))
def test_a_full_disk_is_one_error_line(name: str, tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        code, err = _finish(_accel(WRITERS[name], tmp_path, stdout=full))
    assert code == EXIT_ERROR
    assert err.splitlines()[-1] == "accel: error: cannot write the output: No space left on device"
    assert "Traceback" not in err and "Exception ignored" not in err


def test_a_closed_stdout_is_one_error_line_and_a_closed_stderr_is_silence(tmp_path: Path) -> None:
    code, err = _finish(_accel(["info"], tmp_path, preexec_fn=lambda: os.close(1)))
    assert (code, err) == (EXIT_ERROR, "accel: error: cannot write the output: stdout or stderr is closed\n")
    proc = _accel(["scan", "--exit-zero", "train.py"], tmp_path, stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2))
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0  # the summary line for the closed stderr is dropped, the command still runs
    assert out.decode().startswith("train.py:2:5 ACC")


def _first_cells(text: str) -> list[str]:
    """The first column of every table row of an ``accel info`` rendering (continuation lines skipped)."""
    cells = []
    for line in text.splitlines():
        if line[:1] in "│┃":
            first = line[1:].split(line[0])[0].strip()
            if first:
                cells.append(first)
    return cells


def test_readme_shows_what_accel_info_prints(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("$ accel info ")
    example = readme[start : readme.index("```", start)]
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["info"]) == 0
    assert _first_cells(example) == _first_cells(capsys.readouterr().out)
