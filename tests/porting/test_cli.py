"""`accel scan` / `accel port` as a user runs them: formats, exit codes, config, writes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from accel_abstraction.porting import runner
from accel_abstraction.porting.__main__ import main

COUPLED = 'import torch\nx = torch.ones(2).cuda()\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n'
CLEAN = 'import torch\n"""torch.cuda is mentioned in a string."""\nx = torch.ones(2)  # not .cuda()\n'
MANUAL_ONLY = "import torch\ng = torch.cuda.CUDAGraph()\n"


@pytest.fixture()
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "train.py").write_text(COUPLED)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_text_output_is_file_line_col_code_message_suggestion(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "."]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "train.py:2:5 ACC111 .cuda() moves to a CUDA device (.to(accel.device()))",
        "train.py:3:4 ACC121 torch.cuda.is_available() (accel.is_accelerator_available(...))",
        "train.py:4:5 ACC161 torch.cuda.synchronize() (accel.synchronize(...))",
    ]


def test_scan_exits_1_on_a_finding_like_a_linter_and_0_with_exit_zero(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "train.py"]) == 1
    assert main(["scan", "clean.py"]) == 0
    assert main(["scan", "--check", "train.py"]) == 1  # the pre-commit hook's spelling
    assert main(["scan", "--check", "clean.py"]) == 0
    capsys.readouterr()
    assert main(["scan", "--exit-zero", "train.py"]) == 0
    assert capsys.readouterr().out.count("ACC1") == 3  # still reported
    (tree / "broken.py").write_text("x = torch.cuda(\n")
    assert main(["scan", "broken.py"]) == 1
    assert main(["scan", "--exit-zero", "broken.py"]) == 0
    with pytest.raises(SystemExit) as usage:
        main(["scan", "--check", "--exit-zero", "train.py"])
    assert usage.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_json_format(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["scan", "--format", "json", "."])
    data = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["line"], f["code"], f["portable"]) for f in data["findings"]] == [
        ("train.py", 2, "ACC111", True),
        ("train.py", 3, "ACC121", True),
        ("train.py", 4, "ACC161", True),
    ]
    assert data["summary"]["files"] == 2 and data["summary"]["findings"] == 3


def test_sarif_format(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "train.py").write_text(COUPLED + MANUAL_ONLY.split("\n", 1)[1])
    main(["scan", "--format", "sarif", "train.py"])
    log = json.loads(capsys.readouterr().out)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"
    assert [r["ruleId"] for r in run["results"]] == ["ACC111", "ACC121", "ACC161", "ACC205"]


def test_suppression_comments(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "s.py").write_text(
        "import torch\n"
        "a = x.cuda()  # accel: ignore[ACC111]\n"
        "b = x.cuda()  # accel: ignore[ACC101]\n"
        "c = x.to('cuda') if torch.cuda.is_available() else x  # accel: ignore\n"
    )
    main(["scan", "s.py"])
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines()] == ["ACC111"]


def test_noqa_comments_suppress_like_ruff(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "s.py").write_text(
        "import torch\n"
        "a = x.cuda()  # noqa: ACC111\n"  # suppressed
        "b = x.cuda()  # NOQA:ACC101,ACC111  other words\n"  # suppressed: case and spacing as ruff reads them
        "c = x.cuda()  # noqa: F401, E501 ACC111\n"  # suppressed, beside other tools' codes
        "d = x.cuda()  # noqa: F401\n"  # kept: another tool's code only
        "e = x.cuda()  # noqa: ACC101\n"  # kept: another of our codes
        "f = x.to('cuda') if torch.cuda.is_available() else x  # noqa\n"  # bare: everything
        "g = x.cuda()  # noqa:\n"  # kept: a colon and no code suppresses nothing
        "h = x.cuda()  # noqa: F401  # accel: ignore[ACC111]\n"  # suppressed by the other form
    )
    assert main(["scan", "s.py"]) == 1
    kept = [line.split(":")[1] for line in capsys.readouterr().out.splitlines()]
    assert kept == ["5", "6", "8"]
    (tree / "quiet.py").write_text("import torch\nx = y.cuda()  # noqa: ACC111\n")
    assert main(["scan", "quiet.py"]) == 0


def test_pyproject_selection_read_from_tool_accel_scan(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "pyproject.toml").write_text('[tool.accel]\nbackend = "cpu"\n\n[tool.accel.scan]\nignore = ["ACC111", "sync-streams"]\n')
    main(["scan", "train.py"])
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines()] == ["ACC121"]
    main(["scan", "--select", "ACC1", "--ignore", "ACC121", "train.py"])
    # the command line replaces select and ignore from the file
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines()] == ["ACC111", "ACC161"]


def test_bad_configuration_is_one_line_naming_the_file(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "pyproject.toml").write_text('[tool.accel.scan]\nselct = ["ACC1"]\n')
    assert main(["scan", "train.py"]) == 2
    err = capsys.readouterr().err.strip()
    # the core's message for every section: file and line, the key, the known keys, a suggestion
    assert err.startswith(f"accel: error: {tree / 'pyproject.toml'}:2: unknown key 'selct' in [tool.accel.scan]")
    assert "known keys: exclude, ignore, select." in err and "Did you mean 'select'?" in err
    (tree / "pyproject.toml").write_text('[tool.accel.scan]\nignore = "ACC104"\n')
    assert main(["scan", "train.py"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{tree / 'pyproject.toml'}:2 [tool.accel.scan] ignore: invalid value 'ACC104' for 'ignore'" in err
    (tree / "pyproject.toml").write_text('[tool.accel.scan]\nselect = ["ACC1"]\n')
    assert main(["scan", "--select", "ACC9", "train.py"]) == 2
    assert "matches no rule code or category" in capsys.readouterr().err


def test_unparseable_file_is_reported_not_fatal(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "broken.py").write_text("x = torch.cuda(\n")
    assert main(["scan", "."]) == 1
    captured = capsys.readouterr()
    assert "broken.py:1: cannot parse" in captured.err
    assert "train.py:2:5 ACC111" in captured.out


def test_process_pool_gives_the_same_results(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(6):
        (tree / f"m{i}.py").write_text(COUPLED)
    main(["scan", "--jobs", "1", "."])
    sequential = capsys.readouterr().out
    monkeypatch.setattr(runner, "PARALLEL_THRESHOLD", 2)
    calls: list[int] = []
    real = runner.ProcessPoolExecutor

    def spy(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "ProcessPoolExecutor", spy)
    main(["scan", "--jobs", "2", "."])
    assert calls and capsys.readouterr().out == sequential


# ------------------------------------------------------------------ port


def test_port_prints_a_diff_and_changes_nothing(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["port", "train.py"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "+import accel_abstraction as accel\n" in out and "+x = torch.ones(2).to(accel.device())\n" in out
    assert (tree / "train.py").read_text() == COUPLED


def test_port_write_is_idempotent_and_leaves_clean_files_alone(tree: Path) -> None:
    clean = tree / "clean.py"
    before = clean.stat().st_mtime_ns
    assert main(["port", "--check", "."]) == 1
    assert main(["port", "--write", "."]) == 0
    ported = (tree / "train.py").read_text()
    assert ported == (
        "import accel_abstraction as accel\nimport torch\nx = torch.ones(2).to(accel.device())\n"
        "if accel.is_accelerator_available():\n    accel.synchronize()\n"
    )
    assert clean.read_bytes() == CLEAN.encode() and clean.stat().st_mtime_ns == before
    assert main(["port", "--check", "."]) == 0
    assert main(["port", "--write", "."]) == 0
    assert (tree / "train.py").read_text() == ported
    assert not [p for p in tree.iterdir() if p.name.endswith(".accel-port")]


def test_port_keeps_crlf_and_file_mode(tree: Path) -> None:
    path = tree / "win.py"
    path.write_bytes(COUPLED.replace("\n", "\r\n").encode())
    os.chmod(path, 0o750)
    main(["port", "--write", "win.py"])
    data = path.read_bytes()
    assert b"accel.synchronize()\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert path.stat().st_mode & 0o777 == 0o750


def _port_refused(tree: Path, name: str, text: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``accel port --write name`` on ``text``; check it failed and left the file as it was; its stderr."""
    path = tree / name
    path.write_text(text)
    assert main(["port", "--write", name]) == 1
    assert path.read_text() == text
    return capsys.readouterr().err


def test_port_never_writes_a_file_that_does_not_parse(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "cannot parse" in _port_refused(tree, "broken.py", "x = y.cuda(\n", capsys)


def test_port_reports_what_it_could_not_port(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "g.py").write_text(MANUAL_ONLY)
    assert main(["port", "--check", "g.py"]) == 0  # nothing portable remains
    err = capsys.readouterr().err
    assert re.search(r"g\.py:2:5 ACC205 CUDA graphs: torch\.cuda\.CUDAGraph \(manual: .+\) \[not ported\]", err)


def test_plugin_rules_through_the_hook(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plugins = pytest.importorskip("accel_abstraction.plugins")
    from accel_abstraction.hookspecs import hookimpl
    from accel_abstraction.porting.rules import Rule

    class GpuLib:
        @hookimpl
        def accel_scan_rules(self, register):  # type: ignore[no-untyped-def]
            register(Rule("XYZ001", "manual", "uses gpulib", names=("gpulib.kernels",)))

    (tree / "p.py").write_text("import gpulib.kernels as k\nk.launch()\nimport gpulib\ngpulib.other()\n")
    plugins.reset()
    plugins.register_plugin(GpuLib(), "gpulib-rules")
    try:
        main(["scan", "p.py"])
    finally:
        plugins.reset()
    assert capsys.readouterr().out.splitlines() == ["p.py:2:1 XYZ001 uses gpulib: gpulib.kernels.launch (manual: no portable equivalent)"]


def test_port_refuses_when_accel_means_something_else(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _port_refused(tree, "hf.py", "from accelerate import Accelerator as accel\nx = y.cuda()\n", capsys)
    assert "hf.py:1: the name 'accel' is already bound" in err


def test_progress_goes_to_stderr_and_only_when_asked_or_on_a_terminal(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scan", "--progress", "--jobs", "1", "."]) == 1
    assert capsys.readouterr().out.count("ACC1") == 3  # stdout holds the report alone
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert runner.want_progress(None, runner.PROGRESS_THRESHOLD)
    assert not runner.want_progress(None, runner.PROGRESS_THRESHOLD - 1)
    assert not runner.want_progress(False, 10_000)


def test_port_lists_the_programs_own_command_line_options_that_name_cuda(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "opts.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        'p.add_argument("--device", default="cuda")\n'
        'p.add_argument("--gpu-device", type=int, default=0)\n'
        'p.add_argument("-d", "--device-name", choices=["cuda", "cpu"], default="cpu")\n'
        'p.add_argument("--epochs", type=int, default=0)\n',
        encoding="utf-8",
    )
    assert main(["port", "opts.py"]) == 0
    err = capsys.readouterr().err
    lines = [line.strip() for line in err.splitlines() if line.startswith("  opts.py:")]
    assert [line.split(" ")[0:2] for line in lines] == [["opts.py:3", "--device:"], ["opts.py:4", "--gpu-device:"], ["opts.py:5", "--device-name:"]]
    assert "default 'cuda' (the port makes it accel.device_type())" in lines[0]
    assert "pass `--device <accel.device_type()>`" in lines[0]
    assert "a CUDA device ordinal" in lines[1]
    assert "add accel.device_type() to the choices" in lines[2]
    assert "3 command-line option(s) name CUDA" in err
