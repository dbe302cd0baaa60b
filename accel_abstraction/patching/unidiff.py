"""Parse unified diffs (``git format-patch`` output) and apply them to text, in pure Python.

Only what a source patch series needs: modifications of existing text files. New,
deleted, renamed and binary files are refused with a clear error. A hunk applies where
its context and removed lines match exactly, at the line the hunk names or, like
``patch``, at the nearest other line (an offset); there is no fuzz, so a hunk never
lands on text that merely resembles its context.

Pure Python rather than ``git apply``/``patch`` in a subprocess: it needs no external
tool (slim containers, Windows), and ``git apply`` run inside some other git work tree
(an overlay directory under a project checkout) resolves paths against that tree's top
and silently skips the files it considers outside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .errors import HunkMismatchError, PatchError

__all__ = ["FileDiff", "Hunk", "apply_file_diff", "parse_diff"]

_NO_NEWLINE = "\\ No newline at end of file"


@dataclass(frozen=True)
class Hunk:
    """One ``@@ -old_start,old_len +new_start,new_len @@`` block.

    ``lines`` holds ``(tag, text)`` pairs, ``tag`` being ``" "``, ``"-"`` or ``"+"`` and
    ``text`` the line with its line ending (absent on a last line without newline).
    """

    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[tuple[str, str], ...]

    def old_lines(self) -> list[str]:
        """The lines this hunk expects in the file (context and removed)."""
        return [text for tag, text in self.lines if tag in " -"]

    def new_lines(self) -> list[str]:
        """The lines this hunk leaves in the file (context and added)."""
        return [text for tag, text in self.lines if tag in " +"]


@dataclass(frozen=True)
class FileDiff:
    """The hunks for one file; ``path`` is relative to the tree root (``a/``/``b/`` stripped)."""

    path: str
    hunks: tuple[Hunk, ...] = field(default_factory=tuple)


def _strip_prefix(raw: str, source: str) -> str:
    path = raw.split("\t", 1)[0].strip()
    if path == "/dev/null":
        raise PatchError(f"{source}: creating or deleting files is not supported ({raw.strip()!r})")
    if path.startswith(("a/", "b/")):
        path = path[2:]
    if path.startswith("/") or ".." in path.split("/"):
        raise PatchError(f"{source}: unsafe path {path!r} in diff header")
    return path


def _parse_range(text: str) -> tuple[int, int]:
    start, _, length = text.partition(",")
    return int(start), int(length) if length else 1


def parse_diff(text: str, source: str = "<diff>") -> list[FileDiff]:
    """Return the file diffs in ``text`` (a unified diff, with or without email headers).

    ``source`` names the patch in error messages. Raises :class:`PatchError` when a hunk
    is truncated or malformed, or the diff is not a plain modification.
    """
    lines = text.splitlines(keepends=True)
    files: list[FileDiff] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(("rename from", "new file mode", "deleted file mode", "GIT binary patch")):
            raise PatchError(
                f"{source}:{i + 1}: only modifications of text files are supported ({line.strip()!r})"
            )
        if not (line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        old_path = _strip_prefix(line[4:], source)
        new_path = _strip_prefix(lines[i + 1][4:], source)
        if old_path != new_path:
            raise PatchError(f"{source}:{i + 1}: renames are not supported ({old_path} -> {new_path})")
        i += 2
        hunks: list[Hunk] = []
        while i < len(lines) and lines[i].startswith("@@ "):
            hunk, i = _parse_hunk(lines, i, source)
            hunks.append(hunk)
        if not hunks:
            raise PatchError(f"{source}:{i + 1}: no hunks for {old_path}")
        files.append(FileDiff(old_path, tuple(hunks)))
    return files


def _parse_hunk(lines: list[str], i: int, source: str) -> tuple[Hunk, int]:
    header = lines[i]
    try:
        old_part, new_part = header.split("@@")[1].split()
        old_start, old_len = _parse_range(old_part.lstrip("-"))
        new_start, new_len = _parse_range(new_part.lstrip("+"))
    except (IndexError, ValueError):
        raise PatchError(f"{source}:{i + 1}: malformed hunk header {header.strip()!r}") from None
    body: list[tuple[str, str]] = []
    old_left, new_left = old_len, new_len
    i += 1
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise PatchError(f"{source}: hunk {header.strip()!r} is truncated")
        line = lines[i]
        if line.rstrip("\r\n") == _NO_NEWLINE:
            _drop_newline(body, source, i)
            i += 1
            continue
        tag, text = line[:1], line[1:]
        if line in ("\n", "\r\n"):  # some tools strip the space of an empty context line
            tag, text = " ", line
        if tag == " ":
            old_left, new_left = old_left - 1, new_left - 1
        elif tag == "-":
            old_left -= 1
        elif tag == "+":
            new_left -= 1
        else:
            raise PatchError(f"{source}:{i + 1}: unexpected line in hunk {header.strip()!r}: {line!r}")
        if old_left < 0 or new_left < 0:
            raise PatchError(f"{source}:{i + 1}: hunk {header.strip()!r} has more lines than it declares")
        body.append((tag, text))
        i += 1
    if i < len(lines) and lines[i].rstrip("\r\n") == _NO_NEWLINE:
        _drop_newline(body, source, i)
        i += 1
    return Hunk(old_start, old_len, new_start, new_len, tuple(body)), i


def _drop_newline(body: list[tuple[str, str]], source: str, i: int) -> None:
    if not body:
        raise PatchError(f"{source}:{i + 1}: '{_NO_NEWLINE}' before any line")
    tag, text = body[-1]
    body[-1] = (tag, text.rstrip("\r\n"))


def _candidates(expected: int, low: int, high: int) -> Iterator[int]:
    """Positions from ``expected`` outwards (expected, +1, -1, +2, ...) within [low, high]."""
    yield expected
    for delta in range(1, max(expected - low, high - expected) + 1):
        if expected + delta <= high:
            yield expected + delta
        if expected - delta >= low:
            yield expected - delta


def apply_file_diff(text: str, diff: FileDiff, *, reverse: bool = False, source: str = "<diff>") -> str:
    """Return ``text`` with ``diff`` applied (or un-applied with ``reverse=True``).

    Raises :class:`HunkMismatchError` naming the hunk when its lines are not found.
    """
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0  # first line of ``lines`` not yet copied to ``out``
    offset = 0  # where the previous hunk landed relative to where it said it would
    for number, hunk in enumerate(diff.hunks, 1):
        find, replace = (
            (hunk.new_lines(), hunk.old_lines()) if reverse else (hunk.old_lines(), hunk.new_lines())
        )
        start = (hunk.new_start if reverse else hunk.old_start) - 1
        if not find:  # pure insertion: the range start is the line *before* the insertion
            start += 1
        expected = min(max(start + offset, cursor), len(lines))
        position = next(
            (
                p
                for p in _candidates(expected, cursor, len(lines) - len(find))
                if lines[p : p + len(find)] == find
            ),
            None,
        )
        if position is None:
            header = f"@@ -{hunk.old_start},{hunk.old_len} +{hunk.new_start},{hunk.new_len} @@"
            first = next((t for tag, t in hunk.lines if tag != "+"), "").strip()
            raise HunkMismatchError(
                f"{source}: hunk {number} ({header}) does not apply to {diff.path}"
                f"{' in reverse' if reverse else ''}: its lines (starting {first!r}) are not in the file"
            )
        out.extend(lines[cursor:position])
        out.extend(replace)
        cursor = position + len(find)
        offset = position - start
    out.extend(lines[cursor:])
    return "".join(out)
