"""Run a script (or ``-m module``) under :func:`redirect_cuda`, then report the redirected sites."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import AccelError
from .context import redirect_cuda
from .report import as_json, print_table, write_json

__all__ = ["RunOptions", "run"]


@dataclass
class RunOptions:
    target: str
    args: Sequence[str] = ()
    module: bool = False
    report: str = "table"  # table | json | none
    output: str | None = None  # JSON path ("-": stdout); implies a JSON report
    allow_missing: bool = False


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run(opts: RunOptions) -> int:
    """Run the target; return its exit status. An :class:`AccelError` raised by it propagates after the report."""
    from ..runtime import current

    backend = current()
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    if opts.module:
        sys.argv = [opts.target, *opts.args]
        if sys.path:
            sys.path[0] = os.getcwd()
    else:
        if not os.path.exists(opts.target):
            raise AccelError(f"accel run: script {opts.target!r} does not exist")
        sys.argv = [opts.target, *opts.args]
        if sys.path:
            sys.path[0] = os.path.dirname(os.path.abspath(opts.target))
    redirect = redirect_cuda(backend, allow_missing=opts.allow_missing)
    error: AccelError | None = None
    try:
        if opts.module:
            runpy.run_module(opts.target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(opts.target, run_name="__main__")
        status = 0
    except SystemExit as exc:
        status = _exit_code(exc.code)
    except AccelError as exc:
        error, status = exc, 2
    except Exception:
        traceback.print_exc()
        status = 1
    finally:
        redirect.undo()
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
        _report(redirect, opts)
    if error is not None:
        raise error
    return status


def _report(redirect: redirect_cuda, opts: RunOptions) -> None:
    sites = redirect.sites()
    b = redirect.backend
    if opts.output or opts.report == "json":
        write_json(as_json(sites, b.name, b.device_type, opts.allow_missing), opts.output or "-")
    if opts.report == "table":
        print_table(sites, b.name, opts.allow_missing)
