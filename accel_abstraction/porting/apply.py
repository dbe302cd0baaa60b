"""Porting files on disk: unified diffs, atomic writes, never a broken file."""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

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


def atomic_write(path: Path, text: str, encoding: str) -> None:
    """Replace ``path`` with ``text``: a temporary file in the same folder, then ``os.replace``."""
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".accel-port")
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


def port_file(path: Path, enabled: Callable[[str], bool] | None = None, write: bool = False) -> PortResult:
    """Port one file; with ``write`` the file is replaced only when the output changed and parses."""
    from .codemod import PortResult, port_source  # needs libcst: the `port` extra, not `accel scan`

    try:
        source, encoding = read_source(path)
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        return PortResult(str(path), "", "", error=f"{path}: cannot read: {exc}")
    # Keep the file's own newlines: read_source decodes bytes, so "\r\n" survives as is.
    result = port_source(source, str(path), enabled)
    if write and result.error is None and result.changed:
        atomic_write(path, result.output, encoding)
    return result
