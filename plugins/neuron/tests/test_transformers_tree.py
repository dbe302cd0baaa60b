"""The transformers test tree builder and the suite runner's bookkeeping (scripts/transformers_*.py).

Runs here without transformers and without a network: the tree is built from small git
repositories made in a temporary folder (``--git-dir`` and a ``file://`` clone).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parent / "scripts"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


tree = _load("transformers_tests_tree")
suite = _load("transformers_suite")


def test_the_committed_sources_pin_a_tag_and_cover_the_default_files() -> None:
    src = tree.read_sources()
    assert src.repo == "huggingface/transformers" and re.fullmatch(r"v\d+\.\d+\.\d+", src.tag)
    assert re.fullmatch(r"[0-9a-f]{40}", src.commit)
    for test_file in suite.DEFAULT_FILES:  # each default file's model folder is in the tree
        assert str(Path(test_file).parent) in src.paths, test_file
    assert {"tests/*.py", "src/transformers", "conftest.py"} <= set(src.paths)


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, str]:
    """A repository shaped like transformers at a tag, plus a file the tree must leave out."""
    repo = tmp_path / "upstream"
    files = {
        "conftest.py": "", "src/transformers/__init__.py": '__version__ = "9.1.0"\n',
        "tests/test_modeling_common.py": "", "tests/models/gpt2/test_modeling_gpt2.py": "",
        "tests/models/bert/test_modeling_bert.py": "", "docs/huge.md": "not wanted",
    }  # fmt: skip
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git("init", "-q", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "release", cwd=repo)
    _git("tag", "v9.1.0", cwd=repo)
    return repo, _git("rev-parse", "HEAD", cwd=repo)


def _sources(commit: str) -> object:
    return tree.Sources("o/transformers", "v9.1.0", commit, ("conftest.py", "src/transformers", "tests/*.py"))


@pytest.mark.parametrize("how", ["git-dir", "clone"])
def test_the_tree_holds_the_listed_paths_only(upstream: tuple[Path, str], tmp_path: Path, how: str) -> None:
    repo, commit = upstream
    out = tmp_path / "tree"
    if how == "git-dir":
        out.mkdir()
        tree.from_git_dir(repo / ".git", _sources(commit), [*_sources(commit).paths, "tests/models/gpt2"], out)
    else:
        tree.from_clone(repo.as_uri(), _sources(commit), [*_sources(commit).paths, "tests/models/gpt2"], out)
    got = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert got == [
        "conftest.py", "src/transformers/__init__.py", "tests/models/gpt2/test_modeling_gpt2.py",
        "tests/test_modeling_common.py",
    ]  # fmt: skip
    assert suite.tree_version(out) == "9.1.0"


def test_a_tag_that_moved_is_refused(upstream: tuple[Path, str], tmp_path: Path) -> None:
    repo, _ = upstream
    with pytest.raises(SystemExit, match="not .* as"):
        tree.from_clone(repo.as_uri(), _sources("0" * 40), ["conftest.py"], tmp_path / "tree")
    with pytest.raises(SystemExit, match="failed"):
        tree.from_git_dir(repo / ".git", _sources("0" * 40), ["conftest.py"], tmp_path)


def test_outcomes_read_junit(tmp_path: Path) -> None:
    junit = tmp_path / "r.xml"
    junit.write_text(
        '<testsuites><testsuite>'
        '<testcase classname="m.T" name="test_a"/>'
        '<testcase classname="m.T" name="test_b"><failure message="AssertionError: 1 != 2&#10;more"/></testcase>'
        '<testcase classname="m.T" name="test_c"><skipped message="needs cuda"/></testcase>'
        '<testcase classname="m.T" name="test_d"><error message="boom"/></testcase>'
        '</testsuite></testsuites>'
    )  # fmt: skip
    assert suite._outcomes(junit) == {
        "m.T::test_a": ("passed", ""), "m.T::test_b": ("failed", "AssertionError: 1 != 2"),
        "m.T::test_c": ("skipped", "needs cuda"), "m.T::test_d": ("error", "boom"),
    }  # fmt: skip
    assert suite._outcomes(tmp_path / "absent.xml") == {}
    assert suite.UPSTREAM_TABLE_TESTS.search("T::test_eager_matches_sdpa_inference_01_fp16_pad_left")
    assert suite.UPSTREAM_TABLE_TESTS.search("T::test_fsdp2_plan_vs_ddp_0_untied")
    assert not suite.UPSTREAM_TABLE_TESTS.search("T::test_flex_attention_with_grads")


def test_counts_come_from_pytests_summary_line(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(
        "tests/x.py::T::test_a PASSED\n"
        "= 8 failed, 144 passed, 174 skipped, 47 warnings, 1997 subtests passed in 242.14s (0:04:02) =\n"
    )
    assert suite.pytest_counts(log) == {"passed": 144, "failed": 8, "skipped": 174, "error": 0}
    log.write_text("==== 1 error, 2 deselected in 3.0s ====\n")
    assert suite.pytest_counts(log) == {"passed": 0, "failed": 0, "skipped": 0, "error": 1}
    log.write_text("killed before the summary\n")
    assert suite.pytest_counts(log) is None


def test_a_legs_row_takes_pytests_counts_and_falls_back_to_junit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "t-cpu.log"
    log.write_text("=== 3 passed, 1 skipped in 2.00s ===\n")
    outcomes = {"a": ("passed", ""), "b": ("failed", "x")}
    assert suite.leg_row("t.py", "cpu", log, outcomes, 2.0)[2] == {"passed": 3, "failed": 0, "skipped": 1, "error": 0}
    killed = suite.leg_row("t.py", "neuron", tmp_path / "none.log", outcomes, 9.0)  # no summary line: the junit's
    assert killed[2] == {"passed": 1, "failed": 1, "skipped": 0, "error": 0}
    suite.print_rows([killed], 10)
    assert capsys.readouterr().out.splitlines()[1].split() == ["t.py", "neuron", "1", "1", "0", "0", "9s"]
