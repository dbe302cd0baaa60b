"""Plain-data results of a scan: :class:`Finding`, its optional :class:`Fix`, :class:`FileResult`.

Everything here is picklable so results travel back from worker processes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Fix:
    """How ``accel port`` rewrites one site.

    The span is that of the expression (or assignment) to rewrite, with 1-based lines and
    0-based *character* columns, the coordinates libcst's ``PositionProvider`` uses.

    Kinds (``text`` and ``drop`` as each needs them):
        ``replace``: the expression becomes ``text``.
        ``rename_call``: the call's callee becomes ``text``; argument ``drop`` (a
            position or keyword name) is removed.
        ``to_device``: ``x.cuda(i, **kw)`` becomes ``x.to(accel.device(i), **kw)``.
        ``is_cuda``: ``x.is_cuda`` becomes ``x.device.type == accel.device_type()``
            (parenthesised when ``text == "paren"``).
        ``wrap_device``: the expression ``e`` becomes ``accel.device(e)``.
        ``device_from_fstring`` / ``device_from_concat`` / ``device_from_format``:
            ``f"cuda:{i}"``, ``"cuda:" + str(i)``, ``"cuda:{}".format(i)`` become
            ``accel.device(i)``.
        ``assign_call``: the statement ``flag = value`` becomes ``text(value)``.
        ``drop_statement``: the statement ``flag = value`` is removed (it repeats the
            previous statement's portable call).
        ``autocast_enabled``: ``torch.cuda.amp.autocast(flag)`` becomes
            ``text(enabled=flag)``.
        ``keep``: the expression stays; only ``guard`` changes it.

    ``guard`` keeps the meaning on the cpu backend (see :mod:`.mapping`, ``on_cpu``):
        ``"value"``: the rewritten expression ``e`` becomes
            ``(e if accel.is_accelerator_available() else otherwise)``;
            ``"bare"``: the same without parentheses (the whole statement or assigned value);
        ``"enabled"``: the rewritten call gets ``enabled=... and accel.is_accelerator_available()``
            (``enabled=accel.is_accelerator_available()`` when it had none).
    """

    kind: str
    line: int
    col: int
    end_line: int
    end_col: int
    text: str = ""
    drop: int | str | None = None
    guard: str = ""
    otherwise: str = ""

    @property
    def span(self) -> tuple[int, int, int, int]:
        return (self.line, self.col, self.end_line, self.end_col)


@dataclass(frozen=True)
class Finding:
    """One site of coupling. ``line`` and ``col`` are 1-based (col counts characters)."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    code: str
    category: str
    message: str
    suggestion: str | None = None
    fix: Fix | None = None

    @property
    def portable(self) -> bool:
        """Whether ``accel port`` can rewrite this site automatically."""
        return self.fix is not None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["portable"] = self.portable
        data.pop("fix")
        return data


@dataclass
class FileResult:
    """Findings for one file, or why it could not be scanned."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    skipped: bool = False  # the cheap pre-check showed the file cannot contain coupling
