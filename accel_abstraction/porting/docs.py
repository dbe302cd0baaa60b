"""Generate the rule and API tables of ``docs/porting.md`` from :mod:`.rules` and :mod:`.mapping`.

``python -m accel_abstraction.porting.docs [--check] [PATH]`` rewrites the text between the
``<!-- generated:NAME -->`` and ``<!-- end generated:NAME -->`` markers (``--check``: exit 1
when the file differs, writing nothing).  ``nox -s docs`` runs it; a test keeps the
committed file in step.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .. import docgen
from .mapping import TABLE
from .rules import BUILTIN_RULES

DOC = Path(__file__).resolve().parents[2] / "docs" / "porting.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def rules_table() -> str:
    """One row per rule: code, category, what it finds, an example and its port."""
    lines = ["| Code | Category | Finds | Example | Ported to |", "|---|---|---|---|---|"]
    for rule in BUILTIN_RULES:
        example, ported = (rule.examples[0] if rule.examples else ("", None))
        after = _code(_cell(ported)) if ported is not None else "manual: " + _cell(rule.suggestion or "no portable equivalent")
        lines.append(f"| {rule.code} | {rule.category} | {_cell(rule.message)} | {_code(_cell(example))} | {after} |")
    return "\n".join(lines) + "\n"


def api_table() -> str:
    """One row per CUDA API of the mapping table."""
    lines = ["| CUDA API | Code | Kind | Port to | On the cpu backend |", "|---|---|---|---|---|"]
    for row in TABLE:
        port_to = _code(row.port_to) if row.portable else "manual: " + _cell(row.hint)
        if row.portable and row.hint:
            port_to += f" ({_cell(row.hint)})"
        # a manual row under which other rows lie covers the rest of its names: ``torch.cuda.*``
        parent = row.kind == "manual" and any(other.api.startswith(row.api + ".") for other in TABLE)
        name = row.api + (".*" if parent else "")
        lines.append(f"| `{name}` | {row.code} | {row.kind} | {port_to} | {_cell(row.on_cpu_text)} |")
    return "\n".join(lines) + "\n"


SECTIONS = {"rules": rules_table, "apis": api_table}


def render(text: str) -> str:
    """``text`` with every generated section replaced by its current content."""
    return docgen.render(text, SECTIONS)


def main(argv: list[str] | None = None) -> int:
    return docgen.main("python -m accel_abstraction.porting.docs", DOC, SECTIONS, argv)


if __name__ == "__main__":
    sys.exit(main())
