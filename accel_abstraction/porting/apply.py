"""Porting files on disk: unified diffs, atomic writes, never a broken file.

A symlink is written through (its target is ported; the link stays a link).  Writes go to
a hidden temporary file next to the target (``.NAME.XXXX.accel-port``), then
``os.replace``; a run killed in between leaves such a file, which the next run removes.
"""

from __future__ import annotations

import difflib
import glob
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .notebooks import PORT_REFUSAL
from .runner import read_source

if TYPE_CHECKING:
    from .codemod import PortResult


def unified_diff(result: PortResult) -> str:
    """The change as a unified diff (``a/`` and ``b/`` prefixes, like ``git diff``)."""
    lines = difflib.unified_diff(
        result.source.splitlines(keepends=True),
        result.output.splitlines(keepends=True),
        fromfile=result.path if Path(result.path).is_absolute() else f"a/{result.path}",
        tofile=result.path if Path(result.path).is_absolute() else f"b/{result.path}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


TEMP_SUFFIX = ".accel-port"


def atomic_write(path: Path, text: str, encoding: str) -> None:
    """Replace ``path`` (through a symlink: its target) with ``text``, atomically."""
    path = path.resolve()
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def remove_leftovers(path: Path) -> list[str]:
    """Delete temporary files an interrupted earlier write of ``path`` left behind."""
    target = path.resolve()
    removed = []
    for leftover in target.parent.glob(f".{glob.escape(target.name)}.*{TEMP_SUFFIX}"):
        if leftover.is_file() and not leftover.is_symlink():
            leftover.unlink()
            removed.append(str(leftover))
    return removed


def port_file(path: Path, enabled: Callable[[str], bool] | None = None, write: bool = False) -> PortResult:
    """Port one file; with ``write`` the file is replaced only when the output changed and parses.

    Every failure comes back as ``error`` (the file is then unchanged on disk).
    """
    from .codemod import PortResult, port_source  # needs libcst: the `port` extra, not `accel scan`

    if path.suffix == ".ipynb":
        return PortResult(str(path), "", "", error=f"{path}: {PORT_REFUSAL}")
    try:
        source, encoding = read_source(path)
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        return PortResult(str(path), "", "", error=f"{path}: cannot read: {exc}")
    # Keep the file's own newlines: read_source decodes bytes, so "\r\n" survives as is.
    result = port_source(source, str(path), enabled)
    if write:
        try:
            result.cleaned = remove_leftovers(path)
            if result.error is None and result.changed:
                atomic_write(path, result.output, encoding)
                result.written = True
        except OSError as exc:
            reason = exc.strerror or str(exc)
            result.error = f"{path}: cannot write ({reason}: {exc.filename or path.parent}); file left unchanged"
    return result
