"""Lone carriage returns (CR-only or mixed line endings) around a port.

Python reads a lone ``\\r`` as a line break, and so does the scanner; libcst does not keep it
(it drops a CR-only file's last line ending). Such a file is ported as LF text
(:func:`as_lf`), and :func:`restore_endings` puts every line's own ending back: an unchanged line keeps its ending, a new or
changed line takes the ending of the line it replaces (or of the line before it). Files
with LF or CRLF endings only never come here: they are ported byte for byte as they are.
"""

from __future__ import annotations

import difflib
import re

__all__ = ["as_lf", "has_lone_cr", "restore_endings"]

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def has_lone_cr(text: str) -> bool:
    """Whether ``text`` holds a CR that is not part of a CRLF."""
    return re.search(r"\r(?!\n)", text) is not None


def _split(text: str) -> tuple[list[str], list[str]]:
    """Lines without their endings, and each line's ending (``""`` for a last line without one)."""
    bodies, endings = [], []
    for match in _LINE.finditer(text):
        line = match.group()
        body = line.rstrip("\r\n")
        bodies.append(body)
        endings.append(line[len(body) :])
    return bodies, endings


def as_lf(text: str) -> str:
    """``text`` with every line ending (CRLF, CR, LF) an LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def restore_endings(text: str, ported: str) -> str:
    """``ported`` (the port of ``as_lf(text)``) with the line endings of ``text`` back."""
    bodies, endings = _split(text)
    new_bodies, new_endings = _split(ported)
    default = next((end for end in endings if end), "\n")
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, bodies, new_bodies, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k, j in enumerate(range(j1, j2)):
            if not new_endings[j]:
                end = ""  # the port's last line has no ending: neither had the file's
            elif tag == "equal" or i1 + k < i2:
                end = endings[i1 + k] or default
            else:
                end = endings[i1 - 1] if i1 > 0 and endings[i1 - 1] else default
            out.append(new_bodies[j] + end)
    return "".join(out)
