"""Files written whole or not at all, inputs that cannot block, one writer at a time.

Every file a command writes (``accel scan -o``, ``accel port --write``, ``accel parity
--record``/``--out``, ``accel run -o``, ``accel patches``) goes through
:func:`atomic_write`: the data goes to a hidden temporary file in the destination's own
folder, is flushed to disk (``fsync``), then renamed over the destination, and the folder
is synced. A run killed at any point, or a full disk, leaves either the old file or the
new one at the destination, never a mix; on failure the temporary file is removed and
:class:`WriteError` says what could not be written and that the old file is untouched.
The temporary name carries the writer's process id, so the next write of the same file
removes what a killed writer left (:func:`remove_stale_temps`).

Every file a command reads that a user names (a parity reference, a patch manifest,
``accel run``'s script) is opened through :func:`read_regular`, which refuses a FIFO, a
device or a socket instead of blocking on it.

:func:`dir_lock` serialises two runs that write under the same folder (two ``accel port
--write`` on one tree, two ``accel patches apply`` on one target).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .errors import AccelError

__all__ = [
    "TEMP_SUFFIX",
    "ChangedSinceReadError",
    "InputFileError",
    "LockTimeoutError",
    "WriteError",
    "atomic_write",
    "dir_lock",
    "fsync_dir",
    "process_alive",
    "read_regular",
    "remove_stale_temps",
    "resolve_output",
    "unchanged_since_read",
]

#: Ending of the temporary files :func:`atomic_write` makes (``.NAME.XXXXXX.accel-tmp``).
TEMP_SUFFIX = ".accel-tmp"


class WriteError(AccelError, OSError):
    """A file could not be written (full disk, no permission, ...); the destination is unchanged."""


class ChangedSinceReadError(WriteError):
    """The file changed on disk after the tool read it: the tool's version was not written
    (the user's edit is kept)."""


class InputFileError(AccelError, OSError):
    """A file named as input is missing, unreadable, too large or not a regular file."""


class LockTimeoutError(AccelError):
    """Another run held the lock on a folder for longer than the wait allowed."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_dir(folder: Path) -> None:
    """Flush ``folder``'s entries (a rename into it) to disk; best effort where unsupported."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(
    path: str | os.PathLike[str],
    data: str | bytes,
    *,
    encoding: str = "utf-8",
    suffix: str = TEMP_SUFFIX,
    what: str = "",
    expect: bytes | None = None,
) -> Path:
    """Replace ``path`` with ``data`` atomically: temp file in the same folder, fsync, rename.

    A symlink at ``path`` is written through (its target is replaced; the link stays). A
    character device or FIFO at ``path`` (``/dev/stdout``, a named pipe) is written as the
    stream it is; a socket or block device is refused.
    An existing file keeps its permission bits; a new one gets ``0o666`` minus the umask.
    ``str`` data is encoded with ``encoding`` and written without newline translation.
    Raises :class:`WriteError` (the destination unchanged, no temporary file left) when
    the folder is missing or not writable, the disk is full, or ``path`` is a folder.
    ``what`` names the file in the message (``"--output"``, ``"the report"``).

    ``expect``: the bytes the caller read from ``path`` and rewrote (``accel port --write``,
    ``accel patches apply --in-place``). Right before the rename the file is read again; if
    it is not those bytes any more (someone saved it meanwhile) nothing is replaced and
    :class:`ChangedSinceReadError` says so: a tool never overwrites an edit it did not see.
    """
    dest = Path(path)
    if dest.is_symlink():
        dest = dest.resolve()
    label = f"{what} {dest}" if what else str(dest)
    payload = data.encode(encoding) if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(dest.stat().st_mode)
        existed = True
    except FileNotFoundError:
        mode, existed = 0o666 & ~_umask(), False
    except OSError as exc:
        raise WriteError(f"cannot write {label}: {exc.strerror or exc}") from None
    if dest.is_dir():
        raise WriteError(f"cannot write {label}: it is a folder; give a file name")
    if existed and (stat.S_ISCHR(dest.stat().st_mode) or stat.S_ISFIFO(dest.stat().st_mode)):
        return _write_stream(dest, payload, label)  # /dev/stdout, /dev/null, a named pipe: a stream
    if existed and not stat.S_ISREG(dest.stat().st_mode):
        raise WriteError(f"cannot write {label}: it is {_kind(dest.stat().st_mode)}; give a file name")
    if suffix == TEMP_SUFFIX:  # a caller with its own suffix cleans up its own way (accel port)
        remove_stale_temps(dest, suffix)
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.{os.getpid()}.", suffix=suffix)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if expect is not None:
            unchanged_since_read(dest, expect, label)
        os.replace(tmp, dest)
        tmp = ""
    except OSError as exc:
        kept = "left unchanged" if existed else "not created"
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENOSPC:
            reason = "no space left on the device"
        raise WriteError(f"cannot write {label}: {reason}; the file is {kept}") from None
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    fsync_dir(dest.parent)
    return dest


def unchanged_since_read(path: Path, expect: bytes, label: str = "") -> None:
    """Raise :class:`ChangedSinceReadError` unless ``path`` still holds ``expect`` (what was read)."""
    try:
        now = path.read_bytes()
    except FileNotFoundError:
        now = None
    if now != expect:
        what = "was deleted" if now is None else "changed"
        raise ChangedSinceReadError(
            f"{label or path} {what} after it was read (saved by someone else meanwhile?); not written, "
            "the file on disk is kept as it is now: run the command again to include it"
        )


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (owned by anyone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def remove_stale_temps(dest: Path, suffix: str = TEMP_SUFFIX) -> list[Path]:
    """Delete the temporary files of ``dest`` that a killed :func:`atomic_write` left
    (``.NAME.PID.XXXXXX<suffix>`` whose process is gone); return them. A temporary file of
    a writer still running is left alone."""
    removed: list[Path] = []
    prefix = f".{dest.name}."
    try:
        names = os.listdir(dest.parent)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        pid = name[len(prefix) :].split(".", 1)[0]
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        path = dest.parent / name
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink():
                path.unlink()
                removed.append(path)
    return removed


def _write_stream(dest: Path, payload: bytes, label: str) -> Path:
    """Write to a character device or a FIFO the user named (no temporary file: it is a stream)."""
    try:
        with open(dest, "wb") as fh:
            fh.write(payload)
    except OSError as exc:
        reason = "no space left on the device" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
        raise WriteError(f"cannot write {label}: {reason}") from None
    return dest


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: str | os.PathLike[str], what: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``; never blocks on a FIFO or a device.

    Opens without blocking, then checks the opened file: a FIFO, socket, device or folder
    raises :class:`InputFileError` naming ``what`` (``"the parity reference"``) and what the
    path is; so does a missing or unreadable file, and one larger than ``limit`` bytes.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputFileError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"{what} {path} is {_kind(info.st_mode)}, not a regular file; give a file")
        if limit is not None and info.st_size > limit:
            raise InputFileError(
                f"{what} {path} is {info.st_size} bytes, more than the {limit} this reads; is it the right file?"
            )
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        if isinstance(exc, AccelError):
            raise
        raise InputFileError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def resolve_output(path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> Path:
    """``path`` made absolute against ``cwd`` (default: the current folder, now).

    Call it when the command starts: a relative ``-o`` then names a file under the
    folder the command was invoked from, whatever the program does to its cwd later.
    """
    p = Path(path)
    return p if p.is_absolute() else Path(cwd if cwd is not None else os.getcwd()) / p


#: How long :func:`dir_lock` waits for another run by default (seconds).
LOCK_WAIT = 600.0


@contextlib.contextmanager
def dir_lock(folder: str | os.PathLike[str], what: str, wait: float = LOCK_WAIT) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``folder`` (``flock`` on the folder itself: no lock
    file is left anywhere) while the block runs.

    When another run holds it, says so on stderr and waits up to ``wait`` seconds, then
    raises :class:`LockTimeoutError`. The lock dies with the process (a killed run never
    leaves a stale lock). Where ``flock`` is not available the block runs unlocked.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise WriteError(f"cannot open {folder} to lock it: {exc.strerror or exc}") from None
    try:
        deadline = time.monotonic() + wait
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    break  # the file system does not lock: run unlocked
                if not told:
                    print(f"accel: waiting for another {what} on {folder} to finish", file=sys.stderr)
                    told = True
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f"another {what} has held {folder} for over {wait:.0f} s; "
                        "wait for it to finish or stop it, then run again"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
