"""Where user code called a redirected CUDA API: file, line, API, how often (the hot path).

Each redirected call asks :meth:`SiteRecorder.enter` who called it. The caller's code
object is classified once (cached per code object) as *internal* (torch,
accel-abstraction, the selected backend's plugin package, FX-generated code) or *user*
code. A call from user code is counted under ``(code, line, api)``; for an internal caller
the stack is walked up to the first user frame, so ``nn.Linear(4, 4, device="cuda")`` is
reported at the user's line, not inside ``torch/nn``.

Counting increments a per-site counter cell without a lock: under free-threaded
concurrency a count can be one short, never attributed to the wrong line. A replacement
remembers the last site that called it (code object, instruction offset, cell), so a
loop calling it from one line pays an identity check and an increment. The hot path keys a site by
``(id(code), f_lasti, api)``: hashing a code object hashes its whole bytecode, and
``f_lineno`` decodes the line table on every access, while ``id`` and the instruction offset
are plain integers. Code objects are kept alive by the recorder (an id is never reused
while recorded); offsets become line numbers when the report is made.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from torch.compiler import is_dynamo_compiling as is_compiling

__all__ = ["Site", "SiteRecorder"]

_getframe = sys._getframe

#: Status of a site: served by the backend, served as a no-op (the backend has nothing to do:
#: pinning memory without pinned memory, emptying a cache it does not keep), served a
#: neutral value (``allow_missing``), or raised.
REDIRECTED, NOOP, MISSING, FAILED = "redirected", "no-op", "missing", "failed"
#: Status of a multi-device site served on one device (``nn.DataParallel``: :mod:`.data_parallel`).
ONE_DEVICE = "one device"

# Generated code that is never the user's: FX graph modules, frozen importlib.
_GENERATED_PREFIXES = ("<eval_with_key", "<frozen ")

Key = tuple[int, int, str]  # (id(code), instruction offset, api)


@dataclass(frozen=True)
class Site:
    """One call site of one redirected API."""

    file: str
    line: int
    function: str
    api: str
    category: str
    status: str
    count: int
    hint: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


class SiteRecorder:
    """Counts redirected calls per call site. One per installed redirect."""

    def __init__(self, internal_dirs: Iterable[str]) -> None:
        self._dirs = tuple(sorted({os.path.join(os.path.realpath(d), "") for d in internal_dirs}))
        self._internal: dict[int, bool] = {}
        self._codes: dict[int, CodeType] = {}
        #: A one-element list (a counter cell) per site: a caller that keeps a site's cell
        #: increments it without hashing the key again (see ``Server.function``).
        self.counts: dict[Key, list[int]] = {}
        self.status: dict[Key, str] = {}
        self.meta: dict[str, tuple[str, str]] = {}
        #: api -> (code, offset, counter cell, key) of its last user site; replaced whole (thread-safe)
        self._last: dict[str, tuple[CodeType, int, list[int], Key]] = {}

    # -------------------------------------------------------------- classification

    def _classify(self, code: CodeType, frame: FrameType | None = None) -> bool:
        name = code.co_filename
        if name.startswith(_GENERATED_PREFIXES):
            internal = True
        elif name.startswith("<"):
            # <string>, <stdin>, notebooks: the user's code, unless torch exec'd it in its own module
            module = frame.f_globals.get("__name__", "") if frame is not None else ""
            internal = isinstance(module, str) and (module == "torch" or module.startswith("torch."))
        else:
            internal = os.path.realpath(name).startswith(self._dirs)
        self._codes[id(code)] = code
        self._internal[id(code)] = internal
        return internal

    def is_internal(self, code: CodeType) -> bool:
        """True if ``code`` belongs to torch, accel-abstraction, the backend's plugin, or generated code."""
        flag = self._internal.get(id(code))
        return self._classify(code) if flag is None else flag

    def _user_frame(self, frame: FrameType | None) -> FrameType | None:
        internal = self._internal
        while frame is not None:
            code = frame.f_code
            flag = internal.get(id(code))
            if flag is None:
                flag = self._classify(code, frame)
            if not flag:
                return frame
            frame = frame.f_back
        return None

    # -------------------------------------------------------------- recording

    def describe(self, api: str, category: str, hint: str) -> None:
        """Register how ``api`` is reported (once, at install)."""
        self.meta[api] = (category, hint)

    def enter(self, api: str, depth: int = 2) -> Key | None:
        """Count a call of ``api`` made by the frame ``depth`` levels up; None if that caller is internal.

        The redirect serves a user call and hands an internal call to the original.
        While torch.compile traces, nothing is counted and the call is served (frames
        cannot be inspected there); an empty key is returned.
        """
        if is_compiling():
            return ()  # type: ignore[return-value]
        frame = _getframe(depth)
        code = frame.f_code
        seen = self._last.get(api)
        if seen is not None and seen[0] is code and seen[1] == frame.f_lasti:
            seen[2][0] += 1  # the same user site as the last call (a loop)
            return seen[3]  # type: ignore[no-any-return]
        flag = self._internal.get(id(code))
        if flag is None:
            flag = self._classify(code, frame)
        if flag:
            return None
        return self._count(code, frame.f_lasti, api)

    def _count(self, code: CodeType, offset: int, api: str) -> Key:
        key = (id(code), offset, api)
        cell = self.cell(key)
        cell[0] += 1
        self._last[api] = (code, offset, cell, key)
        return key

    def cell(self, key: Key) -> list[int]:
        """The counter cell of site ``key`` (created at 0)."""
        cell = self.counts.get(key)
        if cell is None:
            cell = self.counts.setdefault(key, [0])
        return cell

    def hit(self, api: str, depth: int = 2) -> Key | None:
        """Count a call of ``api``, attributed to the nearest user frame at or above ``depth``."""
        if is_compiling():
            return None
        frame = _getframe(depth)
        seen = self._last.get(api)
        if seen is not None and seen[0] is frame.f_code and seen[1] == frame.f_lasti:
            seen[2][0] += 1  # the same user site as the last call (a loop)
            return seen[3]  # type: ignore[no-any-return]
        user = self._user_frame(frame)
        if user is None:
            return None
        return self._count(user.f_code, user.f_lasti, api)

    def mark(self, key: Key | None, status: str) -> None:
        """Set the status of a counted site (``no-op``, ``missing`` or ``failed``)."""
        if key:
            self.status[key] = status

    def where(self, key: Key | None) -> str:
        """``"file:line"`` of a key, for error messages."""
        if not key:
            return ""
        code = self._codes[key[0]]
        return f"{code.co_filename}:{_line(code, key[1])}"

    # -------------------------------------------------------------- results

    def sites(self) -> list[Site]:
        """The counted sites, ordered by file and line."""
        merged: dict[tuple[int, int, str], list[Any]] = {}
        for key, (count,) in list(self.counts.items()):
            code_id, offset, api = key
            code = self._codes[code_id]
            line = _line(code, offset)
            entry = merged.setdefault((code_id, line, api), [code, 0, REDIRECTED])
            entry[1] += count
            status = self.status.get(key)
            if status is not None and _RANK[status] > _RANK[entry[2]]:
                entry[2] = status
        out = []
        for (_, line, api), (code, count, status) in merged.items():
            category, hint = self.meta.get(api, ("other", ""))
            out.append(Site(code.co_filename, line, code.co_name, api, category, status, count, hint))
        out.sort(key=lambda s: (s.file, s.line, s.api))
        return out


_RANK = {REDIRECTED: 0, NOOP: 1, ONE_DEVICE: 1, MISSING: 2, FAILED: 3}


def _line(code: CodeType, offset: int) -> int:
    """The source line of the instruction at byte ``offset`` of ``code``."""
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return line
    return code.co_firstlineno
