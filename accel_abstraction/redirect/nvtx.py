"""``torch.cuda.nvtx`` ranges served as profiler ranges of the selected backend.

NVTX annotates a CUDA timeline; on another backend the same annotations become
``torch.profiler`` ranges (``record_function``), which appear in ``torch.profiler``
traces on every device, and cost almost nothing when no profiler is running.
``range_push``/``range_pop`` keep a per-thread stack and return the depths NVTX returns
(the depth of the range pushed, of the range popped; ``-1`` when nothing is open);
``range_start``/``range_end`` pair by the returned id; ``range(msg, *args)`` is a context
manager (``msg.format(*args)``, as in torch); ``mark(msg)`` records an empty range.
A range is recorded only while a profiler runs (``torch.profiler.profile``), as an NVTX
range only reaches a timeline while a CUDA profiler listens: otherwise the calls keep the
depth count and cost a check.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .hints import port_hint
from .serve import Server
from .spec import Redirect

__all__ = ["nvtx_redirects"]



_profiling = torch._C._autograd._profiler_enabled


def _enter(msg: str) -> Any:
    """A profiler range for ``msg``, or None when no profiler runs (a range costs ~50 us; the check ~50 ns)."""
    if not _profiling():
        return None
    return torch.ops.profiler._record_function_enter_new(msg, None)


def _exit(handle: Any) -> None:
    if handle is not None:
        torch.ops.profiler._record_function_exit._RecordFunction(handle)


def nvtx_redirects(s: Server) -> list[Redirect]:
    """Redirects of ``torch.cuda.nvtx.*`` (none when the backend is CUDA itself)."""
    if s.backend.device_type == "cuda":
        return []
    nvtx = torch.cuda.nvtx
    local = threading.local()
    started: dict[int, Any] = {}
    ids = itertools.count(1)

    def stack() -> list[Any]:
        st = getattr(local, "stack", None)
        if st is None:
            st = local.stack = []
        return st

    def range_push(msg: str) -> int:
        st = stack()
        st.append(_enter(msg))
        return len(st) - 1

    def range_pop() -> int:
        st = stack()
        if not st:
            return -1
        _exit(st.pop())
        return len(st)

    def range_start(msg: str) -> int:
        rid = next(ids)
        started[rid] = _enter(msg)
        return rid

    def range_end(range_id: int) -> None:
        handle = started.pop(range_id, None)
        if handle is not None:
            _exit(handle)

    def mark(msg: str) -> None:
        _exit(_enter(msg))

    @contextlib.contextmanager
    def nvtx_range(msg: str, *args: Any, **kwargs: Any) -> Iterator[None]:
        handle = _enter(msg.format(*args, **kwargs))
        try:
            yield
        finally:
            _exit(handle)

    impls: dict[str, Callable[..., Any]] = {"range_push": range_push, "range_pop": range_pop, "range_start": range_start,
             "range_end": range_end, "mark": mark, "range": nvtx_range}  # fmt: skip
    return s.redirects(nvtx, "torch.cuda.nvtx", impls, "profiling", port_hint("torch.cuda.nvtx"))
