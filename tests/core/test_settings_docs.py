"""docs/settings.md lists every ``ACCEL_*`` environment variable, and is current."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

from accel_abstraction import settings_docs
from accel_abstraction.docgen import render
from accel_abstraction.environment import PROCESS_VARIABLES

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\bACCEL_[A-Z0-9_]*[A-Z0-9]\b")
#: Names in string literals that are not variables of this project, each with why.
NOT_VARIABLES = {"ACCEL_MYDEV_SOMETHING": "a docstring's example of a third-party plugin's own variable"}


def _sources() -> list[Path]:
    trees = [ROOT / "accel_abstraction", *sorted((ROOT / "plugins").glob("*/accel_*"))]
    return [p for tree in trees for p in sorted(tree.rglob("*.py"))]


def _named_in_strings() -> dict[str, str]:
    """``ACCEL_*`` name -> first ``file:line`` of a string literal naming it."""
    found: dict[str, str] = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for name in NAME.findall(node.value):
                    found.setdefault(name, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_settings_reference_is_current() -> None:
    text = settings_docs.DOC.read_text(encoding="utf-8")
    assert render(text, settings_docs.SECTIONS) == text, "docs/settings.md is stale: run python -m accel_abstraction.settings_docs"


def test_every_variable_the_code_names_is_declared() -> None:
    declared = {v.variable for v in settings_docs.config_variables()} | {v.name for v in PROCESS_VARIABLES}
    undeclared = {
        name: where for name, where in _named_in_strings().items() if name not in declared and name not in NOT_VARIABLES
    }
    assert not undeclared, (
        "ACCEL_* variables named in code but declared by no section and no row of "
        f"accel_abstraction/environment.py (add them there, then regenerate docs/settings.md): {undeclared}"
    )


@pytest.mark.parametrize("var", PROCESS_VARIABLES, ids=lambda v: v.name)
def test_a_process_variable_is_read_where_the_table_says(var) -> None:  # type: ignore[no-untyped-def]
    spec = importlib.util.find_spec(var.read_by)
    assert spec is not None and spec.origin, f"{var.name}: module {var.read_by} not found"
    assert var.name in Path(spec.origin).read_text(encoding="utf-8"), f"{var.read_by} does not name {var.name}"
