"""Generate ``docs/settings.md``: every ``ACCEL_*`` environment variable.

The configuration settings come from their sections (the core's and every plugin's, as
``accel config show`` lists them); the process-level variables from
:data:`accel_abstraction.environment.PROCESS_VARIABLES` and the plugins'
``accel_process_variables`` hook (:func:`~accel_abstraction.environment.process_variables`).
``python -m accel_abstraction.settings_docs [--check] [PATH]``; ``tests/core/test_settings_docs.py``
keeps the committed file in step and fails when code names a variable neither declares.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_core import PydanticUndefined

from .docgen import cell, code, main
from .environment import process_variables
from .sections import SectionSpec

__all__ = ["ConfigVariable", "config_variables", "config_table", "process_table"]

DOC = Path(__file__).resolve().parents[1] / "docs" / "settings.md"


@dataclass(frozen=True)
class ConfigVariable:
    """One configuration setting as its environment variable and ``pyproject.toml`` key."""

    variable: str
    table: str
    key: str
    default: Any
    meaning: str


def _fields(section: Any) -> list[tuple[str, Any, str]]:
    """``(field, default, description)`` of a section, declared or a ``ConfigSection`` class."""
    if isinstance(section, SectionSpec):
        return [(n, s.default, s.description) for n, s in section.settings.items()]
    rows = []  # a third-party plugin's hand-written ConfigSection
    for name, info in section.model_fields.items():
        default = info.default_factory() if info.default is PydanticUndefined and info.default_factory else info.default
        rows.append((name, default, info.description or ""))
    return rows


def config_variables() -> list[ConfigVariable]:
    """Every field of every configuration section (core and plugins), in ``accel config`` order."""
    from .effective_config import _fields_and_prefix, _header, config_sections

    rows = []
    for section in config_sections():
        _, prefix = _fields_and_prefix(section)
        table = ".".join(_header(section))
        for name, default, meaning in _fields(section):
            rows.append(ConfigVariable(f"{prefix}{name}".upper(), table, name, default, meaning))
    return rows


def config_table() -> str:
    lines = ["| variable | `pyproject.toml` key | default | meaning |", "|---|---|---|---|"]
    for v in config_variables():
        default = "" if v.default is None else code(repr(v.default))
        lines.append(f"| `{v.variable}` | `[{v.table}] {v.key}` | {default} | {cell(v.meaning)} |")
    return "\n".join(lines) + "\n"


def process_table() -> str:
    lines = ["| variable | declared by | set by | read by | meaning |", "|---|---|---|---|---|"]
    for owner, v in process_variables():
        lines.append(f"| `{v.name}` | {owner} | {v.set_by} | `{v.read_by}` | {cell(v.meaning)} |")
    return "\n".join(lines) + "\n"


SECTIONS = {"config-variables": config_table, "process-variables": process_table}

if __name__ == "__main__":
    sys.exit(main("python -m accel_abstraction.settings_docs", DOC, SECTIONS))
