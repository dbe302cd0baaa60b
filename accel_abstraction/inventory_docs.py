"""Generate the lists the docs quote, each from its one source.

* ``backend-priorities`` (``README.md``, ``docs/plugins.md``): the ``auto`` order of the in-tree
  backends, from their ``BackendSpec(priority=...)`` registrations (the plugins of
  ``plugins/in-tree.txt``, as the plugin host loads them);
* ``builtin-commands`` (``docs/install.md``): the built-in ``accel`` subcommands, from
  :data:`accel_abstraction.commands.BUILTIN_COMMANDS`.

``python -m accel_abstraction.inventory_docs [--check]`` rewrites (or only checks) every file;
``tests/core/test_inventory_docs.py`` fails when one is stale. Run from a checkout with the
in-tree plugins installed (``pip install -e plugins/...``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from .docgen import cell, main
from .pyproject import toml_parser

__all__ = ["DOCS", "builtin_commands_table", "in_tree_distributions", "in_tree_priorities", "priorities_line"]

ROOT = Path(__file__).resolve().parents[1]


def in_tree_distributions() -> list[str]:
    """The distribution names of the plugins ``plugins/in-tree.txt`` lists (``accel-cpu``, ...)."""
    listed = (ROOT / "plugins" / "in-tree.txt").read_text(encoding="utf-8").splitlines()
    folders = [line.strip() for line in listed if line.strip() and not line.startswith("#")]
    toml = toml_parser()
    return [toml.loads((ROOT / "plugins" / f / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"] for f in folders]


def in_tree_priorities() -> list[tuple[str, int]]:
    """``(backend, priority)`` of every backend the in-tree plugins register, highest first."""
    from .plugins import get_host

    ours = set(in_tree_distributions())
    return [(e.spec.name, e.spec.priority) for e in get_host().registry.by_priority() if e.distribution in ours]


def priorities_line() -> str:
    shown = ", ".join(f"`{name}` {priority}" for name, priority in in_tree_priorities())
    return f"Priorities (`auto`, the in-tree backends): {shown}.\n"


def builtin_commands_table() -> str:
    from .commands import BUILTIN_COMMANDS

    lines = ["| command | what it does | loads the backends' plugins |", "|---|---|---|"]
    for spec in BUILTIN_COMMANDS:
        lines.append(f"| `accel {spec.name}` | {cell(spec.help)} | {'yes' if spec.needs_backends else 'no'} |")
    return "\n".join(lines) + "\n"


#: Each generated file and its sections.
DOCS: Mapping[Path, Mapping[str, Callable[[], str]]] = {
    ROOT / "README.md": {"backend-priorities": priorities_line},
    ROOT / "docs" / "plugins.md": {"backend-priorities": priorities_line},
    ROOT / "docs" / "install.md": {"builtin-commands": builtin_commands_table},
}


def run(argv: list[str]) -> int:
    """Rewrite every file of :data:`DOCS` (``--check``: only check them); 1 when one is stale."""
    return max(main("python -m accel_abstraction.inventory_docs", doc, sections, [str(doc), *argv]) for doc, sections in DOCS.items())


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
