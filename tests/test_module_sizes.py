"""Module sizes: no Python module over 400 lines without a stated reason, no C++ file over 500.

A module over the limit states why in its docstring, in the form ``Why one module of ~N
lines: ...`` (``file`` for the noxfile), and ``N`` is kept honest: the module may have grown
at most 10% past the size its reason was written for. A reason that no longer fits is a
prompt to split the module or to write the reason again, not to raise ``N`` silently.

Test modules are not counted: their length measures the cases they hold, not a design.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY_LIMIT = 400
CPP_LIMIT = 500
SLACK = 1.10
REASON = re.compile(r"Why one (?:module|file) of ~(\d+) lines:")


def _code_files(pattern: str) -> list[Path]:
    found = set(ROOT.glob(pattern))
    return sorted(p for p in found if "tests" not in p.relative_to(ROOT).parts and ".venv" not in p.parts)


PY_FILES = [
    *_code_files("accel_abstraction/**/*.py"),
    *_code_files("plugins/*/accel_*/**/*.py"),
    *_code_files("benchmarks/**/*.py"),
    ROOT / "noxfile.py",
]
CPP_FILES = [*_code_files("plugins/**/csrc/*.cpp"), *_code_files("plugins/**/csrc/*.h")]


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_file_lists_are_not_empty() -> None:
    assert len(PY_FILES) > 100 and CPP_FILES, "the globs above no longer find the code: fix them"


@pytest.mark.parametrize("path", [p for p in PY_FILES if _lines(p) > PY_LIMIT], ids=lambda p: str(p.relative_to(ROOT)))
def test_a_long_python_module_states_why(path: Path) -> None:
    size = _lines(path)
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    match = REASON.search(doc)
    assert match, (
        f"{path.relative_to(ROOT)} has {size} lines (limit {PY_LIMIT}) and its docstring states no "
        f"reason ('Why one module of ~N lines: ...'): split it by job, or say why it is one module"
    )
    stated = int(match.group(1))
    assert size <= stated * SLACK, (
        f"{path.relative_to(ROOT)} has {size} lines; its reason was written for ~{stated}: "
        f"split it, or write the reason again for its size"
    )


@pytest.mark.parametrize("path", CPP_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_cpp_file_over_the_limit(path: Path) -> None:
    size = _lines(path)
    assert size <= CPP_LIMIT, f"{path.relative_to(ROOT)} has {size} lines (limit {CPP_LIMIT}): split it by concern"
