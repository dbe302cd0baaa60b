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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .notebooks import PORT_REFUSAL
from .runner import map_files, read_source

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


def port_file_safely(path: Path, enabled: Callable[[str], bool] | None = None, write: bool = False) -> PortResult:
    """:func:`port_file`, with a bug in porting one file turned into that file's error (unchanged on disk)."""
    try:
        return port_file(path, enabled, write=write)
    except Exception as exc:  # noqa: BLE001 - one file's bug must not leave the tree half ported unreported
        from .codemod import PortResult

        error = f"{path}: internal error {type(exc).__name__}: {exc}; file left unchanged"
        return PortResult(str(path), "", "", error=error)


# Worker-process state, set by _init_port_worker.
_worker_enabled: Callable[[str], bool] | None = None
_worker_write = False


def _init_port_worker(enabled: Callable[[str], bool] | None, write: bool) -> None:
    global _worker_enabled, _worker_write
    _worker_enabled, _worker_write = enabled, write


def _port_in_worker(path: Path) -> PortResult:
    return port_file_safely(path, _worker_enabled, _worker_write)


def port_paths(
    files: Sequence[Path],
    enabled: Callable[[str], bool] | None = None,
    write: bool = False,
    jobs: int | None = None,
    progress: bool = False,
) -> Iterator[PortResult]:
    """Port ``files``, in order, as :func:`~.runner.scan_paths` scans them (a process pool for
    large trees, ``jobs`` workers; ``enabled`` must then be picklable)."""
    return map_files(
        files,
        lambda path: port_file_safely(path, enabled, write),
        _port_in_worker,
        (_init_port_worker, (enabled, write)),
        jobs,
        "porting" if progress else None,
    )
