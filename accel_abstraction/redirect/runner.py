"""Run a script (or ``-m module``) under :func:`redirect_cuda`, then report the redirected sites.

Everything that can be checked before the target runs is checked first, each failure one
:class:`~accel_abstraction.errors.AccelError` line: the target (a script, a directory or
zip with ``__main__.py``, a console script on ``PATH`` such as ``torchrun``, or a module
with ``-m``) and the ``-o`` report path. The target's exit status is ``accel run``'s; a
report that cannot be written at the end is said on stderr and never replaces it. Python
children of the target are redirected too (:mod:`.children`), and their sites merged.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import runpy
import shutil
import stat
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import AccelError
from ..op_usage import OpUsage, UsedOp, annotate, backend_op_support
from .children import collect, merge, propagate
from .context import redirect_cuda
from .failure import print_script_failure, user_frame
from .report import as_json, ops_json, print_ops_table, print_table, write_json
from .sites import Site

__all__ = ["RunOptions", "run"]


@dataclass
class RunOptions:
    target: str
    args: Sequence[str] = ()
    module: bool = False
    report: str = "table"  # table | json | none
    output: str | None = None  # JSON path ("-": stdout); implies a JSON report
    allow_missing: bool = False
    traceback: bool = False  # print a failing script's traceback in full
    ops: bool = False  # also record the ATen operators run on the device (accel_abstraction.op_usage)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def check_output(path: str | None) -> None:
    """Raise :class:`AccelError` unless the JSON report can be written to ``path`` (checked before running)."""
    if path is None or path == "-":
        return
    if os.path.isdir(path):
        raise AccelError(f"accel run: -o {path!r} is a directory; give a file path for the JSON report")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise AccelError(f"accel run: -o {path!r}: directory {parent!r} does not exist; create it or choose another path")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise AccelError(f"accel run: -o {path!r} is not writable; choose another path")


def resolve_script(target: str) -> str:
    """The file ``runpy.run_path`` should run for ``target``, or :class:`AccelError` saying why there is none."""
    if os.path.isdir(target):
        if not os.path.isfile(os.path.join(target, "__main__.py")):
            raise AccelError(
                f"accel run: {target!r} is a directory without __main__.py; give a script, a directory "
                f"with __main__.py, or a module with -m"
            )
        return target
    if os.path.exists(target):
        kind = os.stat(target).st_mode
        if not stat.S_ISREG(kind):
            raise AccelError(
                f"accel run: {target!r} is not a regular file (a FIFO, device or socket); give a Python script"
            )
        return target
    found = shutil.which(target) if os.sep not in target else None
    if found and _is_python_script(found):
        return found  # a console script such as torchrun: its Python file runs in this process
    raise AccelError(f"accel run: script {target!r} does not exist (nor a Python console script of that name on PATH)")


def _is_python_script(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def check_module(name: str) -> None:
    """Raise :class:`AccelError` unless ``-m name`` names a runnable module (checked before running)."""
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(f"{name}.__main__")
            if spec is None:
                raise AccelError(f"accel run -m: {name!r} is a package without __main__; name one of its modules")
    except (ImportError, ValueError) as exc:
        raise AccelError(f"accel run -m: cannot import {name!r}: {exc}") from None
    if spec is None:
        raise AccelError(f"accel run -m: no module named {name!r} (searched the current directory and sys.path)")


def run(opts: RunOptions) -> int:
    """Run the target; return its exit status. An :class:`AccelError` raised by it propagates after the report."""
    from ..runtime import current
    from ..safe_io import resolve_output

    if opts.output is not None and opts.output != "-":
        opts.output = str(resolve_output(opts.output))  # relative to where accel run was started
    check_output(opts.output)
    backend = current()
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    if opts.module:
        if sys.path:
            sys.path[0] = os.getcwd()
        try:
            check_module(opts.target)
        except AccelError:
            if saved_path0 is not None and sys.path:
                sys.path[0] = saved_path0
            raise
        script = opts.target
    else:
        script = resolve_script(opts.target)
        if sys.path:
            sys.path[0] = os.path.dirname(os.path.abspath(script))
    sys.argv = [script, *opts.args]
    redirect = redirect_cuda(backend, allow_missing=opts.allow_missing)
    usage = OpUsage(backend.device_type) if opts.ops else None
    error: AccelError | None = None
    children: list[Site] = []
    processes = 0
    threads_before = set(threading.enumerate())
    whole = _owns_process()
    failed_late = _LateFailures(redirect, opts.traceback)
    try:
        with propagate(backend.name, opts.allow_missing) as sites_dir, failed_late.in_threads():
            try:
                with usage if usage is not None else contextlib.nullcontext():
                    if opts.module:
                        runpy.run_module(opts.target, run_name="__main__", alter_sys=True)
                    else:
                        runpy.run_path(script, run_name="__main__")
                status = 0
            except SystemExit as exc:
                status = _exit_code(exc.code)
            except AccelError as exc:
                error, status = exc, 2
            except Exception as exc:  # noqa: BLE001 - the script's own failure: reported, exit 1
                print_script_failure(exc, redirect, opts.traceback)
                status = 1
            finally:
                _join_threads(threads_before)
                if whole:
                    failed_late.run_exit_handlers()
                children, processes = collect(sites_dir)
            if failed_late.count and status == 0:
                status = 1  # the script's last line ran, but its thread or exit work failed
    finally:
        if not whole:  # in its own process the redirect stays for the interpreter's own end (daemon threads)
            redirect.undo()
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
    used = annotate(usage.counts, backend_op_support(backend)) if usage is not None else None
    _report(merge(redirect.sites(), children), processes, redirect, opts, used)
    if error is not None:
        raise error
    return status


def _owns_process() -> bool:
    from ..cli import owns_process

    return owns_process()


class _LateFailures:
    """What fails after the script's last line: its threads, ``atexit`` handlers and
    ``weakref.finalize`` callbacks. Run under the redirect (a CUDA call there is redirected
    like any other) and reported like the script's own failure; :attr:`count` of them makes
    the exit status non-zero."""

    def __init__(self, redirect: redirect_cuda, full: bool) -> None:
        self.redirect = redirect
        self.full = full
        self.count = 0

    def _report(self, exc: BaseException, where: str) -> None:
        """One line (the script's line that raised, when known); the traceback with ``--traceback``."""
        self.count += 1
        if self.full:
            print(f"accel run: {where} raised {type(exc).__name__}:", file=sys.stderr)
            print_script_failure(exc, self.redirect, True)
            return
        tb, _ = user_frame(exc.__traceback__, self.redirect)
        at = f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else ""
        first = (str(exc).splitlines() or [""])[0]
        print(
            f"accel run: {where} raised {type(exc).__name__}{at}: {first} (accel run --traceback shows the traceback)",
            file=sys.stderr,
        )

    @contextlib.contextmanager
    def in_threads(self) -> Iterator[None]:
        """While the block runs (and, in its own process, until the interpreter ends): an
        exception ending a thread of the script is reported and counted."""
        previous = threading.excepthook

        def hook(args: threading.ExceptHookArgs) -> None:
            if args.exc_type is SystemExit or args.exc_value is None:
                return
            self._report(args.exc_value, f"thread {args.thread.name if args.thread else '?'!r}")

        threading.excepthook = hook
        try:
            yield
        finally:
            if not _owns_process():
                threading.excepthook = previous

    def run_exit_handlers(self) -> None:
        """Run the interpreter's exit work now, while the redirect holds: the ``atexit`` handlers
        (``weakref.finalize`` callbacks among them), as the interpreter would, last registered
        first; each one that raises is reported and counted."""
        previous = sys.unraisablehook

        def hook(unraisable: Any) -> None:
            if unraisable.exc_value is None or isinstance(unraisable.exc_value, SystemExit):
                previous(unraisable)
                return
            self._report(unraisable.exc_value, f"exit handler {getattr(unraisable.object, '__qualname__', unraisable.object)!r}")

        sys.unraisablehook = hook
        try:
            atexit._run_exitfuncs()
        finally:
            sys.unraisablehook = previous


def _join_threads(before: set[threading.Thread]) -> None:
    """Wait for the non-daemon threads the target started, as the interpreter does at exit:
    they run to their end under the redirect, which is undone only after them."""
    me = threading.current_thread()
    for thread in threading.enumerate():
        if thread not in before and thread is not me and not thread.daemon:
            thread.join()


def _report(
    sites: list[Site], processes: int, redirect: redirect_cuda, opts: RunOptions, used: list[UsedOp] | None
) -> None:
    b = redirect.backend
    if opts.output or opts.report == "json":
        data = as_json(sites, b.name, b.device_type, opts.allow_missing)
        if used is not None:
            data["ops"] = ops_json(used)
        try:
            write_json(data, opts.output or "-")
        except OSError as exc:
            if opts.output in (None, "-"):
                raise  # stdout: ends the command as every output failure does (accel_abstraction.exits)
            print(f"accel run: the JSON report could not be written to {opts.output!r}: {exc}", file=sys.stderr)
    if opts.report == "table":
        print_table(sites, b.name, opts.allow_missing, children=processes)
        if used is not None:
            print_ops_table(used, b.name, b.device_type)
