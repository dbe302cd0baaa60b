"""`accel port` on a tree as `accel scan` runs one: `--format json`, `--jobs`, `--progress` (plain lines off a terminal)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accel_abstraction.porting import runner
from accel_abstraction.porting.__main__ import main

COUPLED = "import torch\nx = torch.ones(2).cuda()\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"
MANUAL_ONLY = "import torch\ng = torch.cuda.CUDAGraph()\n"


@pytest.fixture()
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(COUPLED)
    (tmp_path / "graph.py").write_text(MANUAL_ONLY)
    return tmp_path


def test_port_json_holds_each_file_its_sites_and_its_diff(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["port", "m0.py", "graph.py"]) == 0
    diff = capsys.readouterr().out
    assert main(["port", "--format", "json", "m0.py", "graph.py"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["summary"] == {"files": 2, "changed": 1, "manual": 1, "errors": 0, "written": False}
    by_path = {entry["path"]: entry for entry in doc["files"]}
    assert by_path["m0.py"]["diff"] == diff
    assert by_path["m0.py"]["changed"] and not by_path["m0.py"]["written"]
    assert [site["code"] for site in by_path["graph.py"]["manual"]] and not by_path["graph.py"]["changed"]
    assert "[not ported]" not in captured.err  # the sites are in the document, not repeated on stderr


def test_port_in_a_process_pool_gives_the_same_diff_and_files(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["port", "--jobs", "1", "."]) == 0
    sequential = capsys.readouterr()
    monkeypatch.setattr(runner, "PARALLEL_THRESHOLD", 2)
    pools: list[int] = []
    real = runner.ProcessPoolExecutor

    def counting(*args: object, **kwargs: object) -> object:
        pools.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "ProcessPoolExecutor", counting)
    assert main(["port", "--jobs", "2", "."]) == 0
    parallel = capsys.readouterr()
    assert pools and (parallel.out, parallel.err) == (sequential.out, sequential.err)
    assert main(["port", "--jobs", "2", "--write", "."]) == 0
    assert (tree / "m5.py").read_text().startswith("import accel_abstraction as accel\nimport torch\n")


@pytest.mark.parametrize(("command", "label"), [("scan", "scanning"), ("port", "porting")])
def test_progress_off_a_terminal_is_plain_lines_on_stderr(
    command: str, label: str, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main([command, "--progress", "--jobs", "1", "."])
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith(f"{label}: ")]
    assert lines == [f"{label}: {i}/7 files" for i in range(1, 8)]
    assert label not in captured.out
    main([command, "--jobs", "1", "."])  # a small tree and no terminal: no progress unless asked
    assert f"{label}: " not in capsys.readouterr().err
