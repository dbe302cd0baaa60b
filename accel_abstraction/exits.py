"""How an ``accel`` command ends: its exit code and, on failure, one error line.

Every entry point (``accel``, ``python -m accel_abstraction.porting`` / ``.redirect`` /
``.patching``) runs its command through :func:`run_command`, so they all end the same way:

====  =====================================================================================
code  meaning
====  =====================================================================================
0     success
1     the command's own "found something" / "failed" result (see the command's ``--help``)
2     an error: usage, configuration, a plugin's hook raised, or the output could not be
      written (full disk, closed stdout); one ``accel: error: ...`` line on stderr
130   interrupted (Ctrl-C)
141   the reader of stdout went away (``accel info --json | head -c1``): nothing more is
      printed, as for a process that SIGPIPE ended (128 + 13)
====  =====================================================================================

``--traceback`` shows the full traceback of an error. Output is flushed before the code is
returned, so a full disk or a closed pipe is seen here and not, as a traceback, when the
interpreter exits.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .errors import PLUGIN_ATTR, AccelError, headline

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "console",
    "print_error",
    "run_command",
    "terminate_on_sigterm",
]

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

#: OSError numbers that mean "this output cannot be written", wherever the command writes it.
_OUTPUT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EBADF, errno.EIO, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}
)


def _say(line: str) -> None:
    """Print ``line`` on stderr if stderr can take it (it may be the thing that failed)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def _print_traceback(exc: BaseException) -> None:
    try:
        traceback.print_exception(exc)
    except (OSError, ValueError, AttributeError):
        pass


def print_error(exc: BaseException, show_traceback: bool = False) -> int:
    """Print ``exc`` as one ``accel: error: ...`` line (the traceback too if asked); return 2."""
    if show_traceback:
        _print_traceback(exc)
    _say(f"accel: error: {headline(exc)}")
    return EXIT_ERROR


def _occupy_closed_streams() -> None:
    """Give a closed stdout or stderr (``accel info >&-``) a stand-in.

    Python sets ``sys.stdout`` to None when descriptor 1 is closed at start, and the next file
    opened would take descriptor 1 and receive a child process's output. A closed stdout gets
    a read-only ``/dev/null``: writing to it fails with EBADF, which :func:`run_command` reports
    as one line. A closed stderr gets a writable ``/dev/null``: the command runs and its
    messages are dropped, as the caller asked.
    """
    for fd, name, flags in ((1, "stdout", os.O_RDONLY), (2, "stderr", os.O_WRONLY)):
        if getattr(sys, name) is not None:
            continue
        try:
            opened = os.open(os.devnull, flags)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
            setattr(sys, name, open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False))
        except OSError:
            return


def _drop_stdout() -> None:
    """Point stdout at ``/dev/null``, so what is still buffered cannot fail again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real descriptor (a test's capture)
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process


def _output_failure(exc: OSError) -> int:
    if isinstance(exc, BrokenPipeError):
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    _drop_stdout()
    where = f": {exc.filename}" if exc.filename else ""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EBADF and not exc.filename:
        reason = "stdout or stderr is closed"
    _say(f"accel: error: cannot write the output{where}: {reason}")
    return EXIT_ERROR


def _is_output_failure(exc: OSError) -> bool:
    return isinstance(exc, BrokenPipeError) or exc.errno in _OUTPUT_ERRNOS


def run_command(command: Callable[[], int | None], show_traceback: bool = False) -> int:
    """Run ``command``, flush its output and return its exit code; every failure as in the table above.

    An :class:`AccelError` or an exception a plugin's hook raised is one line; an OSError that
    says output cannot be written (a broken pipe, a full disk, a closed stream) is one line or,
    for a broken pipe, silence. Any other exception is a bug and keeps its traceback. The
    ``SystemExit`` of ``--help`` or a usage error passes through once its output is flushed.
    """
    _occupy_closed_streams()
    try:
        try:
            code = int(command() or 0)
        except SystemExit:
            sys.stdout.flush()
            raise
        sys.stdout.flush()
        return code
    except AccelError as exc:
        return print_error(exc, show_traceback)
    except OSError as exc:
        if not _is_output_failure(exc):
            raise
        if show_traceback and not isinstance(exc, BrokenPipeError):
            _print_traceback(exc)
        return _output_failure(exc)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:
        plugin = getattr(exc, PLUGIN_ATTR, None)
        if plugin is None:
            raise
        if show_traceback:
            _print_traceback(exc)
        first = (str(exc).splitlines() or [""])[0]
        _say(f"accel: error: plugin {plugin!r} raised {type(exc).__name__}: {first}")
        return EXIT_ERROR


#: Width of a console writing to a file or a pipe (a CI log): wide enough that no line of a
#: report wraps; a table takes only the width its cells need.
FILE_WIDTH = 10_000


@contextlib.contextmanager
def terminate_on_sigterm(say: str = "") -> Iterator[None]:
    """Turn SIGTERM (and SIGHUP) into ``SystemExit(128 + signal)`` while the block runs in the
    main thread, so ``finally`` blocks run on the way out (a temporary file removed, child
    processes ended) instead of the process vanishing mid-way. ``say``: one line printed on
    stderr when it happens (what state the command leaves)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        if say:
            _say(say.format(signal=signal.Signals(signum).name))
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def console(**kwargs: Any) -> Console:
    """A rich ``Console`` for a command's output whose closed pipe ends the command as above.

    rich's own answer to a closed pipe is ``SystemExit(1)``, which no caller can tell from a
    command's own exit code 1; this console raises ``BrokenPipeError`` for :func:`run_command`.
    Off a terminal (a file, a pipe, a CI log) nothing wraps: rich's 80 columns would cut an
    error line into three, so the width is :data:`FILE_WIDTH` (``COLUMNS`` still wins, as in
    rich) and printed text is soft-wrapped (left whole).
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    stream = kwargs.get("file") or (sys.stderr if kwargs.get("stderr") else sys.stdout)
    if not _is_terminal(stream) and "COLUMNS" not in os.environ:
        kwargs.setdefault("width", FILE_WIDTH)
        kwargs.setdefault("soft_wrap", True)
    return _Console(**kwargs)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
