"""Wrap the lines a port made longer than the file allows, inside brackets, as black and ruff would.

A rewritten line over the limit is split at its last bracket pair when that pair closes the
line (``m = DDP(`` / the arguments, indented / ``)``); where the arguments still do not fit,
one per line with a trailing comma. An assignment or ``return`` whose value ends in no bracket
gets parentheses around the value first. A line no split makes fit is left as the port
wrote it (the port's report names it, :func:`.import_order.long_lines`). Every wrap is checked:
the module's syntax tree must be the same as before it, else the line stays.
"""

from __future__ import annotations

import ast
import io
import tokenize

__all__ = ["wrap_limit", "wrap_long_lines"]

#: ruff's and black's default line length.
DEFAULT_LIMIT = 88


def wrap_limit(source: str, configured: int | None) -> int | None:
    """The length rewritten lines are wrapped to: the project's setting, else 88 where every line
    of ``source`` was within it, else none (a file that never kept to 88 is left as it is)."""
    if configured is not None:
        return configured
    return DEFAULT_LIMIT if all(len(line) <= DEFAULT_LIMIT for line in source.splitlines()) else None

_OPEN, _CLOSE = "([{", ")]}"


def _tokens(line: str) -> list[tokenize.TokenInfo] | None:
    """The tokens of one complete logical line, or ``None`` (a continued or odd line)."""
    try:
        found = list(tokenize.generate_tokens(io.StringIO(line.rstrip("\r\n") + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return [t for t in found if t.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)]


def _trailing_pair(tokens: list[tokenize.TokenInfo]) -> tuple[int, int] | None:
    """Indices of the opening and closing bracket of the last pair that ends the line (a ``:`` or a comment may follow)."""
    code = [i for i, t in enumerate(tokens) if t.type != tokenize.COMMENT]
    if not code:
        return None
    last = code[-1]
    if tokens[last].string == ":" and len(code) > 1:
        last = code[-2]
    if tokens[last].string not in _CLOSE:
        return None
    depth = 0
    for i in range(last, -1, -1):
        s = tokens[i].string
        if tokens[i].type == tokenize.OP and s in _CLOSE:
            depth += 1
        elif tokens[i].type == tokenize.OP and s in _OPEN:
            depth -= 1
            if depth == 0:
                return (i, last) if i + 1 < last else None  # empty brackets: nothing to split
    return None


def _top_level_commas(tokens: list[tokenize.TokenInfo], start: int, end: int) -> list[int]:
    depth = 0
    commas = []
    for i in range(start + 1, end):
        s = tokens[i].string
        if tokens[i].type == tokenize.OP and s in _OPEN:
            depth += 1
        elif tokens[i].type == tokenize.OP and s in _CLOSE:
            depth -= 1
        elif depth == 0 and tokens[i].type == tokenize.OP and s == ",":
            commas.append(i)
    return commas


def _split(line: str, limit: int) -> list[str] | None:
    """``line`` (no line ending) as several lines inside its trailing brackets, or ``None``."""
    tokens = _tokens(line)
    if not tokens or any(t.start[0] != 1 or t.end[0] != 1 for t in tokens):
        return None
    indent = line[: len(line) - len(line.lstrip())]
    if "\t" in indent or any(t.type == tokenize.OP and t.string == ";" for t in tokens):
        return None  # tabs, or several statements on the line: left as written, with a note
    pair = _trailing_pair(tokens)
    if pair is None:
        return _parenthesize(line, tokens, indent, limit)
    opening, closing = pair
    head = line[: tokens[opening].end[1]]
    body = line[tokens[opening].end[1] : tokens[closing].start[1]].strip()
    tail = line[tokens[closing].start[1] :]
    inner = indent + "    "
    if len(inner + body) <= limit:
        return [head, inner + body, indent + tail]
    commas = _top_level_commas(tokens, opening, closing)
    if not commas and tokens[opening].string == "(" and _lone_generator(tokens, opening, closing):
        return None
    pieces, begin = [], tokens[opening].end[1]
    for comma in commas:
        pieces.append(line[begin : tokens[comma].start[1]].strip())
        begin = tokens[comma].end[1]
    last = line[begin : tokens[closing].start[1]].strip()
    if last:
        pieces.append(last)
    if len(pieces) < 2 and not commas:
        return None  # one argument that does not fit: nothing better to do here
    return [head, *(f"{inner}{piece}," for piece in pieces), indent + tail]


def _lone_generator(tokens: list[tokenize.TokenInfo], opening: int, closing: int) -> bool:
    """``f(x for x in y)``: a trailing comma would be a syntax error."""
    return any(t.type == tokenize.NAME and t.string == "for" for t in tokens[opening + 1 : closing])


def _parenthesize(line: str, tokens: list[tokenize.TokenInfo], indent: str, limit: int) -> list[str] | None:
    """``x = a if t else b`` -> ``x = (`` / the value / ``)``; ``return ...`` likewise."""
    code = [t for t in tokens if t.type != tokenize.COMMENT]
    comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
    start = None
    if code and code[0].type == tokenize.NAME and code[0].string == "return" and len(code) > 1:
        start = code[1]
    else:
        assigns = [t for t in code if t.type == tokenize.OP and t.string == "="]
        if len(assigns) == 1 and _depth_before(tokens, assigns[0]) == 0:
            after = code.index(assigns[0]) + 1
            start = code[after] if after < len(code) else None
    if start is None:
        return None
    value_end = code[-1].end[1]
    value = line[start.start[1] : value_end]
    rest = line[value_end:].rstrip() if comment is None else "  " + comment.string
    inner = indent + "    "
    if len(inner + value) > limit:
        return None
    return [line[: start.start[1]] + "(", inner + value, indent + ")" + rest]


def _depth_before(tokens: list[tokenize.TokenInfo], target: tokenize.TokenInfo) -> int:
    depth = 0
    for t in tokens:
        if t is target:
            return depth
        if t.type == tokenize.OP and t.string in _OPEN:
            depth += 1
        elif t.type == tokenize.OP and t.string in _CLOSE:
            depth -= 1
    return depth


def wrap_long_lines(source: str, output: str, limit: int | None) -> str:
    """``output`` with each line the port wrote over ``limit`` wrapped where a split makes it fit.

    ``None``: no limit (a file with lines over 88 and no setting: left as it is). Lines of
    ``source`` are never touched.
    """
    if limit is None:
        return output
    old = set(source.splitlines())
    lines = output.splitlines(keepends=True)
    if not any(len(line.rstrip("\r\n")) > limit and line.rstrip("\r\n") not in old for line in lines):
        return output
    try:
        before = ast.dump(ast.parse(output))
    except (SyntaxError, ValueError):
        return output
    result: list[str] = []
    for i, line in enumerate(lines):
        bare = line.rstrip("\r\n")
        ending = line[len(bare) :]
        split = _split(bare, limit) if len(bare) > limit and bare not in old else None
        if split is None:
            result.append(line)
            continue
        wrapped = [piece + (ending or "\n") for piece in split[:-1]] + [split[-1] + ending]
        try:
            same = ast.dump(ast.parse("".join([*result, *wrapped, *lines[i + 1 :]]))) == before
        except (SyntaxError, ValueError):
            same = False
        result.extend(wrapped if same else [line])
    return "".join(result)
