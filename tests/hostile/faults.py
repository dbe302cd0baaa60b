"""Run one ``accel`` command with a fault at its N-th file-system operation.

::

    python tests/hostile/faults.py count  0 -- patches apply --target T    # how many operations
    python tests/hostile/faults.py kill   7 -- patches apply --target T    # SIGKILL before the 7th
    python tests/hostile/faults.py enospc 3 -- scan src -o report.txt      # 3rd creating one: disk full

The operations are the calls by which a command changes the file system: ``os.open``
for writing (``tempfile.mkstemp`` too), ``os.write``, ``os.fsync``, ``os.replace``,
``os.rename``, ``os.unlink``, ``os.rmdir``, ``os.mkdir``, ``os.chmod``, ``os.ftruncate``
and ``open()`` in a writing mode. ``kill`` kills the process (no cleanup of any kind runs,
as with a power cut to the process) just before operation N; ``enospc`` makes the N-th
*creating* operation (an open for writing, a write, an fsync of a file, a mkdir of a new
folder) fail as a full disk does. ``count`` runs the command whole and prints ``faults: N operations, M creating``
on stderr. This is test tooling: it patches ``os`` in its own process only.
"""

from __future__ import annotations

import builtins
import errno
import os
import signal
import stat
import sys
from collections.abc import Callable
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CREATING = {"open", "write", "fsync", "mkdir", "ftruncate"}


class _Faults:
    def __init__(self, mode: str, at: int) -> None:
        self.mode, self.at = mode, at
        self.ops = self.creating = 0

    def hit(self, name: str, creating: bool) -> None:
        self.ops += 1
        if creating:
            self.creating += 1
        if self.mode == "kill" and self.ops == self.at:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.mode == "enospc" and creating and self.creating == self.at:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _creates(name: str, args: tuple[Any, ...]) -> bool:
    """Whether the call can need new blocks (a full disk fails it): not an fsync of a folder,
    not a mkdir of a folder that exists (that fails with EEXIST first)."""
    if name not in _CREATING:
        return False
    try:
        if name == "fsync":
            return not stat.S_ISDIR(os.fstat(args[0]).st_mode)
        if name == "mkdir":
            return not os.path.lexists(args[0])
    except (OSError, TypeError, IndexError):
        return True
    return True


def _wrap(faults: _Faults, name: str, real: Callable[..., Any], when: Callable[..., bool] | None = None) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if when is None or when(*args, **kwargs):
            faults.hit(name, _creates(name, args))
        return real(*args, **kwargs)

    return wrapper


def install(mode: str, at: int) -> _Faults:
    """Patch ``os`` and ``open`` in this process; return the counter."""
    faults = _Faults(mode, at)

    def opens_for_writing(_path: Any, flags: int, *_a: Any, **_k: Any) -> bool:
        return bool(flags & _WRITE_FLAGS)

    def writing_mode(_file: Any, mode: str = "r", *_a: Any, **_k: Any) -> bool:
        return any(c in mode for c in "wax+")

    os.open = _wrap(faults, "open", os.open, opens_for_writing)
    builtins.open = _wrap(faults, "open", builtins.open, writing_mode)
    for name in ("write", "fsync", "replace", "rename", "unlink", "rmdir", "mkdir", "chmod", "ftruncate"):
        setattr(os, name, _wrap(faults, name, getattr(os, name)))
    return faults


def main(argv: list[str]) -> int:
    mode, at, sep, *command = argv
    assert mode in ("count", "kill", "enospc") and sep == "--", "usage: faults.py count|kill|enospc N -- ARGV..."
    faults = install(mode, int(at))
    from accel_abstraction.cli import main as accel_main

    try:
        code = accel_main(command)
    finally:
        if mode == "count":
            print(f"faults: {faults.ops} operations, {faults.creating} creating", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
