"""Plain-data results of a scan: :class:`Finding` (with its optional :class:`~.fixes.Fix`), :class:`FileResult`.

Everything here is picklable so results travel back from worker processes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .fixes import Fix


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
    #: Scanned, but not by every rule: one line per plugin rule disabled here (its matcher raised).
    notes: list[str] = field(default_factory=list)
