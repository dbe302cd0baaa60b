"""Recall and false alarms of `accel scan` over the hand-written corpus in ``corpus/``.

Each corpus line that must be reported ends with ``# expect: CODE[, CODE]``; every other
line must not be reported (``lookalikes.py`` is all such lines).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from accel_abstraction.porting import BUILTIN_RULES, CATEGORIES, port_source, scan_source

RULES = {r.code: r for r in BUILTIN_RULES}
CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(CORPUS.glob("*.py"))
_EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")


def expectations(source: str) -> set[tuple[int, str]]:
    found = set()
    for lineno, line in enumerate(source.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            found |= {(lineno, code.strip()) for code in match.group(1).split(",")}
    return found


def test_corpus_recall_and_false_alarms() -> None:
    expected_total = hits = 0
    missed: list[str] = []
    false_alarms: list[str] = []
    for path in FILES:
        source = path.read_text(encoding="utf-8")
        expected = expectations(source)
        got = {(f.line, f.code) for f in scan_source(source, path.name).findings}
        expected_total += len(expected)
        hits += len(expected & got)
        missed += [f"{path.name}:{line} {code}" for line, code in sorted(expected - got)]
        false_alarms += [f"{path.name}:{line} {code}" for line, code in sorted(got - expected)]
    recall = hits / expected_total
    print(f"corpus: {len(FILES)} files, {expected_total} expected, recall {recall:.3f}, {len(false_alarms)} false alarms")
    assert expected_total > 80
    assert not missed, f"missed: {missed}"
    assert not false_alarms, f"false alarms: {false_alarms}"


def test_corpus_exercises_every_rule_and_category() -> None:
    codes = {code for path in FILES for _, code in expectations(path.read_text(encoding="utf-8"))}
    assert {r.code for r in BUILTIN_RULES} - codes == set()
    assert {r.category for r in BUILTIN_RULES} == set(CATEGORIES)


def test_lookalikes_are_neither_reported_nor_rewritten() -> None:
    source = (CORPUS / "lookalikes.py").read_text(encoding="utf-8")
    assert scan_source(source).findings == []
    assert port_source(source).output == source


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_port_corpus_file(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    result = port_source(source, path.name)
    assert result.error is None
    ast.parse(result.output)
    assert port_source(result.output, path.name).output == result.output, "second run changed the file"
    left = scan_source(result.output, path.name).findings
    assert [f for f in left if f.portable] == []
    # What remains is exactly the corpus's inherently-CUDA sites (lines shift by the added import).
    manual_expected = sorted(
        code for _, code in expectations(source) if not any(r.code == code and r.portable for r in BUILTIN_RULES)
    )
    assert sorted(f.code for f in left if not RULES[f.code].portable) == manual_expected
    assert all(f.suggestion for f in result.manual)
    if result.applied:
        assert result.output.count("import accel_abstraction as accel\n") == 1


def test_the_projects_own_examples_and_porting_rules_scan_clean() -> None:
    from accel_abstraction.porting.runner import iter_python_files, scan_paths

    root = CORPUS.parents[2]
    files = list(iter_python_files([root / "examples", root / "accel_abstraction" / "porting"]))
    results = scan_paths(files, jobs=1)
    assert len(files) > 15
    assert [f"{f.path}:{f.line} {f.code}" for r in results for f in r.findings] == []
    assert [r.error for r in results if r.error] == []


@pytest.mark.slow
def test_ported_corpus_is_isort_clean_where_the_original_was(tmp_path: Path) -> None:
    import subprocess
    import sys

    def unsorted(folder: Path) -> set[str]:
        run = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I", "--output-format", "concise", str(folder)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert run.returncode in (0, 1), run.stderr
        return {Path(line.split(":")[0]).name for line in run.stdout.splitlines() if "I001" in line}

    (tmp_path / "before").mkdir()
    (tmp_path / "after").mkdir()
    for path in FILES:
        source = path.read_text(encoding="utf-8")
        (tmp_path / "before" / path.name).write_text(source, encoding="utf-8")
        (tmp_path / "after" / path.name).write_text(port_source(source, path.name).output, encoding="utf-8")
    clean = {p.name for p in FILES} - unsorted(tmp_path / "before")
    assert len(clean) >= 8
    assert unsorted(tmp_path / "after") & clean == set()
