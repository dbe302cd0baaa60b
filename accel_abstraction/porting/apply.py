"""Porting files on disk: unified diffs, atomic writes, never a broken file.

A symlink inside the tree is written through (its target is ported; the link stays a link);
one leading outside the tree, and a file with other hard links, is reported and left alone
unless ``--follow-links``.  Writes go to
a hidden temporary file next to the target (``.NAME.XXXX.accel-port``), then
``os.replace``; a run killed in between leaves such a file, which the next run removes.
"""

from __future__ import annotations

import dataclasses
import difflib
import glob
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import safe_io
from .notebooks import PORT_REFUSAL
from .rules import Rule
from .runner import decode_source, map_files, rules_in_worker, worker_loads_rules

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


def atomic_write(path: Path, text: str, encoding: str, expect: bytes | None = None) -> None:
    """Replace ``path`` (through a symlink: its target) with ``text``, atomically
    (:func:`accel_abstraction.safe_io.atomic_write`; temporary files end in :data:`TEMP_SUFFIX`),
    unless it no longer holds ``expect``, the bytes the port was made from."""
    safe_io.atomic_write(path, text, encoding=encoding, suffix=TEMP_SUFFIX, expect=expect)


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def link_problem(path: Path, roots: Sequence[Path]) -> str:
    """Why writing ``path`` would reach outside the tree ``roots`` (resolved folders), or ``""``.

    A symlink whose target lies outside every root, and a file with other hard links (a
    rename gives ``path`` a new inode: the other names would silently keep the old text).
    """
    if path.is_symlink():
        target = path.resolve()
        if not _inside(target, roots):
            return f"a symlink to {target}, outside the tree"
    try:
        links = path.stat().st_nlink
    except OSError:
        return ""
    if links > 1:
        return f"one of {links} hard links to one file (the other names are outside this write)"
    return ""


def write_in_place(path: Path, text: str, encoding: str, expect: bytes | None = None) -> None:
    """Overwrite the file at ``path`` keeping its inode (so every hard link sees the change);
    not atomic: used only for ``--follow-links``. Unless it no longer holds ``expect``."""
    if expect is not None:
        safe_io.unchanged_since_read(path.resolve(), expect, str(path))
    try:
        with open(path.resolve(), "r+b") as fh:
            fh.write(text.encode(encoding))
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise safe_io.WriteError(f"cannot write {path}: {exc.strerror or exc}") from None


def remove_leftovers(path: Path) -> list[str]:
    """Delete temporary files an interrupted earlier write of ``path`` left behind."""
    target = path.resolve()
    removed = []
    for leftover in target.parent.glob(f".{glob.escape(target.name)}.*{TEMP_SUFFIX}"):
        if leftover.is_file() and not leftover.is_symlink():
            leftover.unlink()
            removed.append(str(leftover))
    return removed


@dataclass(frozen=True)
class PortOptions:
    """How :func:`port_file` ports and writes.

    Attributes:
        enabled: ``enabled(code)`` filters the rules (selection; picklable for a process pool).
        write: replace the file when the output changed and parses.
        roots: the resolved folders being ported: a file that is a symlink leaving them or has
            other hard links is not written (``error`` says why) unless ``follow_links``: then
            a symlink is written through and a hard-linked file is overwritten keeping its inode.
        follow_links: see ``roots``.
        rules: the rules to port with (:func:`~.runner.load_rules`; default: the built-in ones).
    """

    enabled: Callable[[str], bool] | None = None
    write: bool = False
    roots: Sequence[Path] | None = None
    follow_links: bool = False
    rules: Sequence[Rule] | None = None


def port_file(path: Path, options: PortOptions = PortOptions()) -> PortResult:
    """Port one file; with ``options.write`` the file is replaced only when the output changed and parses.

    Every failure comes back as ``error`` (the file is then unchanged on disk).
    """
    from .codemod import PortResult, port_source  # needs libcst: the `port` extra, not `accel scan`

    if path.suffix == ".ipynb":
        return PortResult(str(path), "", "", error=f"{path}: {PORT_REFUSAL}")
    try:
        if not path.is_file():
            raise OSError(f"{path} is not a regular file")
        data = path.read_bytes()  # what is compared again right before the write
        source, encoding = decode_source(data)
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        return PortResult(str(path), "", "", error=f"{path}: cannot read: {exc}")
    # Keep the file's own newlines: read_source decodes bytes, so "\r\n" survives as is.
    result = port_source(source, str(path), options.enabled, rules=options.rules)
    if options.write:
        try:
            result.cleaned = remove_leftovers(path)
            if result.error is None and result.changed:
                problem = link_problem(path, options.roots) if options.roots is not None else ""
                if problem and not options.follow_links:
                    result.error = f"{path}: not written: {problem}; pass --follow-links to write it"
                elif problem.startswith("one of"):
                    write_in_place(path, result.output, encoding, expect=data)
                    result.written = True
                else:
                    atomic_write(path, result.output, encoding, expect=data)
                    result.written = True
        except safe_io.WriteError as exc:
            result.error = f"{path}: {exc}"
        except OSError as exc:
            reason = exc.strerror or str(exc)
            result.error = f"{path}: cannot write ({reason}: {exc.filename or path.parent}); file left unchanged"
    return result


def port_file_safely(path: Path, options: PortOptions = PortOptions()) -> PortResult:
    """:func:`port_file`, with a bug in porting one file turned into that file's error (unchanged on disk)."""
    try:
        return port_file(path, options)
    except Exception as exc:  # noqa: BLE001 - one file's bug must not leave the tree half ported unreported
        from .codemod import PortResult

        error = f"{path}: internal error {type(exc).__name__}: {exc}; file left unchanged"
        return PortResult(str(path), "", "", error=error)


# Worker-process state, set by _init_port_worker.
_worker_options = PortOptions()


def _init_port_worker(options: PortOptions, load_rules: bool) -> None:
    global _worker_options
    _worker_options = dataclasses.replace(options, rules=rules_in_worker(load_rules))


def _port_in_worker(path: Path) -> PortResult:
    return port_file_safely(path, _worker_options)


def port_paths(
    files: Sequence[Path], options: PortOptions = PortOptions(), jobs: int | None = None, progress: bool = False
) -> Iterator[PortResult]:
    """Port ``files``, in order, as :func:`~.runner.scan_paths` scans them (a process pool of
    ``jobs`` workers for large trees, which load plugin rules through the hook themselves)."""
    shipped = dataclasses.replace(options, rules=None)  # plugin matchers need not be picklable
    return map_files(
        files,
        lambda path: port_file_safely(path, options),
        _port_in_worker,
        (_init_port_worker, (shipped, worker_loads_rules(options.rules))),
        jobs,
        "porting" if progress else None,
    )
