"""Backend priorities and built-in commands in the docs come from their one source, and are current."""

from __future__ import annotations

import importlib.metadata
import re

import pytest

from accel_abstraction import inventory_docs
from accel_abstraction.docgen import render


@pytest.fixture(scope="module")
def in_tree_installed() -> None:
    for dist in inventory_docs.in_tree_distributions():
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"{dist} is not installed: the priorities cannot be read (pip install -e plugins/...)")


@pytest.mark.usefixtures("in_tree_installed")
@pytest.mark.parametrize("doc", list(inventory_docs.DOCS), ids=lambda p: p.name)
def test_the_generated_lists_are_current(doc) -> None:  # type: ignore[no-untyped-def]
    text = doc.read_text(encoding="utf-8")
    assert render(text, inventory_docs.DOCS[doc]) == text, f"{doc} is stale: run python -m accel_abstraction.inventory_docs"


@pytest.mark.usefixtures("in_tree_installed")
def test_every_in_tree_backend_is_listed_and_a_plugin_readme_quotes_its_own_priority() -> None:
    priorities = dict(inventory_docs.in_tree_priorities())
    assert {"cpu", "cuda", "neuron"} <= set(priorities)
    quoted = {}
    for readme in sorted((inventory_docs.ROOT / "plugins").glob("*/README.md")):
        for name, value in re.findall(r"`([a-z][a-z0-9-]*)` backend[^.]*?priority (\d+)", readme.read_text(encoding="utf-8")):
            quoted[name] = (int(value), readme.relative_to(inventory_docs.ROOT))
    assert quoted, "no plugin README quotes a priority: the check reads nothing"
    wrong = {name: where for name, (value, where) in quoted.items() if priorities.get(name) != value}
    assert not wrong, f"plugin READMEs quote priorities that differ from the registrations {priorities}: {wrong}"


def test_the_commands_table_lists_every_builtin() -> None:
    from accel_abstraction.commands import BUILTIN_COMMANDS

    table = inventory_docs.builtin_commands_table()
    assert [f"`accel {spec.name}`" for spec in BUILTIN_COMMANDS] == re.findall(r"`accel [a-z-]+`", table)
