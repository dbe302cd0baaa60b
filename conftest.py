"""Test tiers for the whole repository (loaded for every test path, ``tests/`` and ``plugins/*/tests``).

Two markers split the suite (docs/testing.md):

- ``slow``: spawns interpreters or processes (subprocess runs, multi-process groups, fresh venvs);
- ``conformance``: PyTorch's op_db/module_db and real models on the emulated device, bit for bit.

The README's test command, ``pytest -m "not slow and not conformance"``, is the quick tier; ``.ci/run``
runs it and then ``pytest -m "slow or conformance"``. A file declares its tier with a module-level
``pytestmark = pytest.mark.conformance``. A conformance file costs a minute to collect (it imports
op_db), so where ``-m`` deselects every test such a file could hold, the file is not collected
at all; the run's summary says how many files were left out that way.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

# A module-level mark that puts the whole file in a tier: ``pytestmark = pytest.mark.<name>``
# (alone or first in a list). Read from the source, so deciding costs no import.
_FILE_MARK = re.compile(r"^pytestmark\s*=\s*\[?\s*pytest\.mark\.(\w+)", re.MULTILINE)
# Tiers that a file may declare to be skipped at collection time; other marks are left to -m.
_TIERS = frozenset({"conformance", "slow"})
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_KEYWORDS = frozenset({"and", "or", "not", "True", "False", "None"})

_left_out: list[Path] = []


def _file_tiers(path: Path) -> frozenset[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return frozenset()
    return frozenset(_FILE_MARK.findall(text)) & _TIERS


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave out a tier file that ``-m`` would deselect entirely, before it is imported."""
    expression = config.option.markexpr
    if not expression or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    tiers = _file_tiers(collection_path)
    if not tiers:
        return None
    # every test in the file carries these marks; marks of single tests are unknown here, so the file
    # is left out only when the expression is false for the file's marks whatever the others are
    compiled = Expression.compile(expression)
    others = sorted(set(_NAME.findall(expression)) - _KEYWORDS - tiers)
    if len(others) > 8:  # too many to try every combination: collect and let -m decide per test
        return None
    for values in itertools.product((False, True), repeat=len(others)):
        marks = tiers | {name for name, on in zip(others, values, strict=True) if on}
        if compiled.evaluate(marks.__contains__):
            return None
    _left_out.append(collection_path)
    return True


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _left_out:
        names = ", ".join(sorted(p.name for p in _left_out))
        terminalreporter.write_line(
            f"{len(_left_out)} file(s) of a deselected tier not collected (-m): {names}"
        )
