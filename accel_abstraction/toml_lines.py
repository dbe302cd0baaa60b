"""Where a key is written in a TOML file: the line, for error messages naming ``FILE:LINE``.

``tomllib`` gives values, not positions. :func:`key_line` walks the text and follows the
three ways TOML writes a key below a table: under its header (``[tool.accel]`` then
``backend = ...``), as a dotted key under a parent table (``[tool]`` then
``accel.backend = ...``, or ``tool.accel.backend = ...`` at the top) and inside an inline
table (``accel = { backend = "cpu" }``, ``[tool.accel]`` then ``neuron = { emulate = true }``).
Keys may be bare, ``"quoted"`` or ``'literal'``, with spaces around the dots.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["key_line"]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPE = re.compile(r"\\(.)")


def _string(text: str, start: int) -> tuple[str, int] | None:
    """The string starting at ``text[start]`` (a quote) and the index after it; ``None`` if unclosed."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        if quote == '"' and text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            body = text[start + 1 : i]
            return (_ESCAPE.sub(r"\1", body) if quote == '"' else body), i + 1
        i += 1
    return None


def _key(text: str, start: int, stop: str) -> tuple[list[str], int] | None:
    """A dotted key from ``text[start:]`` up to the first ``stop`` character; its parts and that index."""
    parts: list[str] = []
    i = start
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text):
            return None
        if text[i] in "\"'":
            found = _string(text, i)
            if found is None:
                return None
            part, i = found
        else:
            match = _BARE.match(text, i)
            if match is None:
                return None
            part, i = match.group(), match.end()
        parts.append(part)
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] in stop:
            return parts, i
        if i >= len(text) or text[i] != ".":
            return None
        i += 1


def _skip_value(text: str, i: int) -> int:
    """The index of the ``,`` or ``}`` ending the (non-table) value at ``text[i:]``."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            found = _string(text, i)
            if found is None:
                return len(text)
            i = found[1]
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c in ",}" and depth <= 0:
            return i
        i += 1
    return i


def _inline(text: str, i: int, prefix: list[str]) -> Iterator[tuple[str, ...]]:
    """Every key path of the inline table opening at ``text[i]`` (``{``), below ``prefix``."""
    i += 1
    while i < len(text):
        while i < len(text) and text[i] in " \t,":
            i += 1
        if i >= len(text) or text[i] == "}":
            return
        found = _key(text, i, "=")
        if found is None:
            return
        parts, i = found
        path = [*prefix, *parts]
        yield tuple(path)
        i += 1
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == "{":
            yield from _inline(text, i, path)
            depth, j = 0, i
            while j < len(text):  # past the nested table
                if text[j] in "\"'":
                    end = _string(text, j)
                    j = end[1] if end else len(text)
                    continue
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
                if depth == 0:
                    break
            i = j
        else:
            i = _skip_value(text, i)


def _paths(line: str, table: list[str]) -> Iterator[tuple[str, ...]]:
    """The key paths a ``key = value`` line under ``[table]`` defines (the dotted key, its inline tables)."""
    found = _key(line, 0, "=")
    if found is None:
        return
    parts, i = found
    path = [*table, *parts]
    for n in range(len(table) + 1, len(path) + 1):  # a.b.c = 1 defines the tables a and a.b too
        yield tuple(path[:n])
    rest = line[i + 1 :].lstrip()
    if rest.startswith("{"):
        yield from _inline(rest, 0, path)


def key_line(text: str, path: tuple[str, ...]) -> int | None:
    """The 1-based line of ``text`` on which the key ``path`` (``("tool", "accel", "backend")``) is written."""
    table: list[str] | None = []
    in_multiline: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if in_multiline is not None:  # inside a """ or ''' string: no key here
            if line.count(in_multiline) % 2 == 1:
                in_multiline = None
            continue
        if not line or line.startswith("#"):
            continue
        if line.startswith("[["):
            table = None  # an array of tables: its keys are not the ones asked for
            continue
        if line.startswith("["):
            header = _key(line, 1, "]")
            table = header[0] if header else None
            if table is not None and tuple(table) == path:
                return number
            continue
        if table is not None and any(p == path for p in _paths(line, table)):
            return number
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 == 1:
                in_multiline = quote
    return None
