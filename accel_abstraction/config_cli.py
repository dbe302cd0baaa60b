"""``accel config show [--json]``: every effective setting, its value and its source.

The answer to "which value is in effect, and why": each row names the setting as a table key
and as a variable, the value the tools would use now, and where it came from (keyword,
environment variable, ``FILE:LINE``, default). Exit 0; 2 when a value is invalid (the one
line naming its source, as every other command gives it).
"""

from __future__ import annotations

import argparse
import json
import sys

from .effective_config import EffectiveSetting, effective_settings

__all__ = ["add_parser", "format_text"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``config`` subcommand (``config show``)."""
    config = subparsers.add_parser(
        "config",
        help="show the effective configuration: every setting, its value and where it came from",
        description="Inspect accel-abstraction's configuration (keywords > ACCEL_* variables > pyproject.toml > defaults).",
    )
    actions = config.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser(
        "show",
        help="every setting of every section (core and plugins) with its value and source",
        description="Every setting with its value and its source: environment variable, FILE:LINE, or default.",
    )
    show.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    show.set_defaults(func=run_show)


def format_text(rows: list[EffectiveSetting]) -> str:
    """Aligned columns, one setting a line, never wrapped (fit for a CI log or a file)."""
    table = [("setting", "variable", "value", "source")]
    table += [(f"{r.table}.{r.key}", r.variable, json.dumps(r.value), r.source) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3] for row in table]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def run_show(args: argparse.Namespace) -> int:
    from .pyproject import find_pyproject

    pyproject = find_pyproject()
    rows = effective_settings(pyproject)
    if args.json:
        document = {"version": 1, "pyproject": str(pyproject) if pyproject else None, "settings": [r.to_dict() for r in rows]}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(format_text(rows))
        print(f"(pyproject.toml read: {pyproject or 'none found above the working directory'})")
    return 0
