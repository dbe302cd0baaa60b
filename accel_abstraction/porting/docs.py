"""Generate the rule and API tables of ``docs/porting.md`` from :mod:`.rules` and :mod:`.mapping`.

``python -m accel_abstraction.porting.docs [--check] [PATH]`` rewrites the text between the
``<!-- generated:NAME -->`` and ``<!-- end generated:NAME -->`` markers (``--check``: exit 1
when the file differs, writing nothing).  ``nox -s docs`` runs it; a test keeps the
committed file in step.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path

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
        name = row.api + ("." + "*" if row.kind == "manual" and row.api.count(".") < 2 else "")
        lines.append(f"| `{name}` | {row.code} | {row.kind} | {port_to} | {_cell(row.on_cpu_text)} |")
    return "\n".join(lines) + "\n"


SECTIONS = {"rules": rules_table, "apis": api_table}


def _fill(make: Callable[[], str], match: re.Match[str]) -> str:
    return match.group(1) + make() + match.group(2)


def render(text: str) -> str:
    """``text`` with every generated section replaced by its current content."""
    for name, make in SECTIONS.items():
        pattern = re.compile(
            rf"(<!-- generated:{name} -->\n).*?(<!-- end generated:{name} -->)", re.DOTALL
        )
        if not pattern.search(text):
            raise ValueError(f"docs: markers <!-- generated:{name} --> ... <!-- end generated:{name} --> not found")
        text = pattern.sub(functools.partial(_fill, make), text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accel_abstraction.porting.docs", description=__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=DOC)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale; write nothing")
    args = parser.parse_args(argv)
    old = args.path.read_text(encoding="utf-8")
    new = render(old)
    if new == old:
        return 0
    if args.check:
        print(f"{args.path} is stale: run python -m accel_abstraction.porting.docs", file=sys.stderr)
        return 1
    args.path.write_text(new, encoding="utf-8")
    print(f"updated {args.path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
