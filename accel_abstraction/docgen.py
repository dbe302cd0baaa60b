"""Generated sections of the docs: the text between ``<!-- generated:NAME -->`` and
``<!-- end generated:NAME -->`` comes from a table in the code, and a test keeps the committed
file in step (``python -m <module> [--check] [PATH]`` rewrites it, or only checks it)."""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["cell", "code", "main", "render"]


def cell(text: str) -> str:
    """``text`` safe in a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def code(text: str) -> str:
    return f"`{text}`" if text else ""


def _fill(make: Callable[[], str], match: re.Match[str]) -> str:
    return match.group(1) + make() + match.group(2)


def render(text: str, sections: Mapping[str, Callable[[], str]]) -> str:
    """``text`` with every generated section replaced by its current content."""
    for name, make in sections.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n).*?(<!-- end generated:{name} -->)", re.DOTALL)
        if not pattern.search(text):
            raise ValueError(f"docs: markers <!-- generated:{name} --> ... <!-- end generated:{name} --> not found")
        text = pattern.sub(functools.partial(_fill, make), text)
    return text


def main(prog: str, doc: Path, sections: Mapping[str, Callable[[], str]], argv: list[str] | None = None) -> int:
    """The command line of a generator: rewrite ``doc`` (or the PATH given), or ``--check`` it."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=doc)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale; write nothing")
    args = parser.parse_args(argv)
    old = args.path.read_text(encoding="utf-8")
    new = render(old, sections)
    if new == old:
        return 0
    if args.check:
        print(f"{args.path} is stale: run {prog}", file=sys.stderr)
        return 1
    args.path.write_text(new, encoding="utf-8")
    print(f"updated {args.path}", file=sys.stderr)
    return 0
