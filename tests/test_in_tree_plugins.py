"""The in-tree backends are listed once, in ``plugins/in-tree.txt``: noxfile.py reads it, and every
other file that must name them all (requirements-dev.txt, pyproject.toml, README.md,
docs/install.md) is checked against it here, the failure naming the file and line to fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _in_tree() -> list[str]:
    lines = (REPO / "plugins" / "in-tree.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _listed(path: str, pattern: str) -> tuple[list[str], str]:
    """The plugin names ``pattern`` (one group) finds in ``path``, and where the first one is."""
    text = (REPO / path).read_text()
    found = [(m.group(1), text.count("\n", 0, m.start()) + 1) for m in re.finditer(pattern, text)]
    assert found, f"{path}: no in-tree plugin list found (pattern {pattern!r}); update this test or the file"
    return [name for name, _ in found], f"{path}:{found[0][1]}"


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("requirements-dev.txt", r"(?m)^-e plugins/(\w+)\s*$"),
        ("pyproject.toml", r'"plugins/(\w+)/tests"'),
        ("README.md", r"(?m)(?<=\| backends \| )(?:`plugins/\w+`(?:, )?)+"),
        ("docs/install.md", r"-e plugins/(\w+)"),
    ],
)
def test_each_file_names_every_in_tree_plugin_in_order(path: str, pattern: str) -> None:
    if "(?<=" in pattern:  # one table cell holding the whole list
        text = (REPO / path).read_text()
        match = re.search(pattern, text)
        assert match, f"{path}: the backends row of the layout table is gone; update this test"
        names = re.findall(r"`plugins/(\w+)`", match.group(0))
        where = f"{path}:{text.count(chr(10), 0, match.start()) + 1}"
    else:
        names, where = _listed(path, pattern)
    assert names == _in_tree(), f"{where}: lists plugins {names}, plugins/in-tree.txt lists {_in_tree()}"


def test_the_list_is_the_plugin_directories() -> None:
    dirs = sorted(p.name for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file())
    assert sorted(_in_tree()) == dirs, f"plugins/in-tree.txt lists {_in_tree()}, plugins/ holds {dirs}"


def test_nox_installs_and_digests_every_listed_plugin() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("noxfile_under_test", REPO / "noxfile.py")
    assert spec is not None and spec.loader is not None
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    assert noxfile.IN_TREE_PLUGINS == _in_tree()
    assert [f"plugins/{n}/pyproject.toml" for n in _in_tree()] == [
        f for f in noxfile.DEPENDENCY_FILES if f.startswith("plugins/") and f.endswith("pyproject.toml")
    ]
