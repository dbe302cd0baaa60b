"""A script's exception during ``accel run``: its traceback, then one line naming the script's call site.

A failure inside ATen (an operator the backend does not implement, a dtype it rejects)
ends in a dispatcher message that can run to a hundred lines and names no line of the
script. ``accel run`` prints the traceback with that message cut to its first line (the
whole message with ``accel --traceback run ...``), then one line with the innermost frame
of the script (the call that failed, however deep in torch it failed), the operator
named in the message if any, and the backend::

    accel run: NotImplementedError at train.py:41 in forward (`out, h = self.lstm(x, h)`), inside torch,
      in aten::_thnn_fused_lstm_cell, on backend 'neuron': Could not run 'aten::_thnn_fused_lstm_cell' ...
"""

from __future__ import annotations

import linecache
import re
import sys
import traceback
from types import TracebackType
from typing import IO

from .context import redirect_cuda

__all__ = ["print_script_failure", "user_frame"]

_OP = re.compile(r"'?(aten::[A-Za-z0-9_.]+|[a-z_]+::[A-Za-z0-9_.]+)'?")


def user_frame(tb: TracebackType | None, redirect: redirect_cuda) -> tuple[TracebackType | None, bool]:
    """The innermost traceback entry in user code, and whether frames of torch (or accel) follow it."""
    found, inside = None, False
    is_internal = redirect.recorder.is_internal
    while tb is not None:
        if is_internal(tb.tb_frame.f_code):
            inside = found is not None or inside
        else:
            found, inside = tb, False
        tb = tb.tb_next
    return found, inside


def print_script_failure(exc: BaseException, redirect: redirect_cuda, full: bool = False, file: IO[str] | None = None) -> None:
    """Print the script's traceback (message cut to its first line unless ``full``) and the call-site line."""
    out = file or sys.stderr
    text = str(exc)
    lines = text.splitlines()
    start = exc.__traceback__  # from the script's first frame: accel run's and runpy's own are noise
    while start is not None and start.tb_next is not None and redirect.recorder.is_internal(start.tb_frame.f_code):
        start = start.tb_next
    if full or len(lines) <= 3:
        traceback.print_exception(type(exc), exc, start, file=out)
    else:
        out.write("Traceback (most recent call last):\n")
        out.write("".join(traceback.format_tb(start)))
        out.write(f"{type(exc).__name__}: {lines[0]}\n")
        out.write(f"  [{len(lines) - 1} more lines of the message; `accel --traceback run ...` prints them]\n")
    tb, inside = user_frame(exc.__traceback__, redirect)
    if tb is None:
        return
    code = tb.tb_frame.f_code
    line = tb.tb_lineno
    source = linecache.getline(code.co_filename, line).strip()
    op = _OP.search(lines[0]) if lines else None
    where = (", inside torch" if inside else "") + (f", in {op.group(1)}" if op else "")
    first = lines[0] if lines else type(exc).__name__
    if len(first) > 200:
        first = first[:197] + "..."
    call = f" (`{source}`)" if source else ""
    out.write(
        f"accel run: {type(exc).__name__} at {code.co_filename}:{line} in {code.co_name}{call}{where}, "
        f"on backend {redirect.backend.name!r}: {first}\n"
    )
