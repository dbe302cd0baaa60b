"""Generate the ``torch.cuda`` table of ``docs/redirect.md`` from :data:`.cuda_rows.ROWS`.

The rows are derived from the porting table (:mod:`.cuda_rows`); the last column says why a
row is served other than its port row alone gives (its declared exception).

``python -m accel_abstraction.redirect.docs [--check] [PATH]``; ``nox -s docs`` runs it, and
``tests/redirect/test_docs.py`` keeps the committed file in step.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..docgen import cell, code, main
from .cuda_rows import ROWS, CudaRow
from .hints import port_hint
from .serve import NO_NEUTRAL

DOC = Path(__file__).resolve().parents[2] / "docs" / "redirect.md"


def _without_feature(row: CudaRow) -> str:
    if row.neutral_of is not None:
        return "served with `--allow-missing` (no memory size)"
    if row.neutral is NO_NEUTRAL:
        return "a capability error"
    value: Any = row.neutral() if callable(row.neutral) else row.neutral
    shown = "does nothing" if value is None else f"`{value!r}`"
    return f"{shown}, reported `no-op`" if row.noop else f"{shown} with `--allow-missing`, else a capability error"


def cuda_table() -> str:
    """One row per redirected ``torch.cuda`` function."""
    lines = [
        "| `torch.cuda.` | category | served by | backend without the feature | port to | differs from the port row |",
        "|---|---|---|---|---|---|",
    ]
    for row in ROWS:
        hint = port_hint(f"torch.cuda.{row.name}")
        lines.append(
            f"| `{row.name}` | {row.category} | {code(cell(row.serve.text))} | {_without_feature(row)} | {cell(hint)} | {cell(row.differs)} |"
        )
    return "\n".join(lines) + "\n"


SECTIONS = {"cuda-functions": cuda_table}

if __name__ == "__main__":
    sys.exit(main("python -m accel_abstraction.redirect.docs", DOC, SECTIONS))
