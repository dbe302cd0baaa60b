"""The report of a redirected run: which CUDA APIs were called where, how often, what to port them to.

:func:`as_json` gives JSON-ready data; :func:`print_table` a rich table (``accel run``
prints it to stderr, so a script's own stdout stays clean).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import IO, Any

from ..op_usage import UsedOp
from .sites import Site

__all__ = ["as_json", "ops_json", "print_ops_table", "print_table", "write_json"]

SCHEMA = 1


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith("..") else rel


def as_json(sites: Sequence[Site], backend: str, device_type: str, allow_missing: bool) -> dict[str, Any]:
    """The report as JSON-ready data (``schema`` 1)."""
    totals: dict[str, int] = {}
    for s in sites:
        totals[s.status] = totals.get(s.status, 0) + s.count
    return {
        "schema": SCHEMA,
        "backend": backend,
        "device_type": device_type,
        "allow_missing": allow_missing,
        "sites": [
            {
                "file": s.file,
                "line": s.line,
                "function": s.function,
                "api": s.api,
                "category": s.category,
                "status": s.status,
                "count": s.count,
                "port_to": s.hint,
            }
            for s in sites
        ],
        "calls": totals,
    }


def write_json(data: dict[str, Any], path: str) -> None:
    """Write the report to ``path`` (``"-"``: stdout)."""
    text = json.dumps(data, indent=2) + "\n"
    if path == "-":
        import sys

        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from ..safe_io import atomic_write

    atomic_write(path, text, what="the JSON report")


_STYLE = {"redirected": "green", "no-op": "cyan", "one device": "cyan", "missing": "yellow", "failed": "bold red"}


def print_table(
    sites: Sequence[Site], backend: str, allow_missing: bool, file: IO[str] | None = None, children: int = 0
) -> None:
    """Print the report as a rich table (to ``file``, default stderr); ``children``: child processes merged in."""
    import sys

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    out = file or sys.stderr
    console = Console(file=out, width=None if out.isatty() else 160)
    if not sites:
        console.print(escape(f"accel run: no CUDA API was redirected (backend {backend!r})."))
        return
    table = Table(title=escape(f"CUDA calls redirected to backend {backend!r}"), title_justify="left")
    for col, kw in (("where", {}), ("API", {}), ("category", {}), ("calls", {"justify": "right"}),
                    ("status", {}), ("port to", {})):  # fmt: skip
        table.add_column(col, **kw)  # type: ignore[arg-type]
    for s in sites:
        style = _STYLE.get(s.status, "")
        table.add_row(escape(f"{_rel(s.file)}:{s.line}"), escape(s.api), escape(s.category), str(s.count),
                      f"[{style}]{s.status}[/]" if style else escape(s.status), escape(s.hint))  # fmt: skip
    console.print(table)
    files = len({s.file for s in sites})
    console.print(
        f"{len(sites)} call site{'s' * (len(sites) != 1)} in {files} file{'s' * (files != 1)}; "
        f"`accel port` rewrites them to the portable API."
        + (f" (Includes {children} child process{'es' * (children != 1)}.)" if children else "")
    )
    if any(s.status == "no-op" for s in sites):
        console.print("[cyan]no-op[/]: the backend has nothing to do for it (no pinned memory, no cache); served as a no-op.")
    if any(s.status == "one device" for s in sites):
        console.print(
            "[cyan]one device[/]: nn.DataParallel ran its replicas one after another on the current device (its scatter/gather "
            "are CUDA-only); for data parallelism use DistributedDataParallel under torchrun."
        )
    if any(s.status == "missing" for s in sites):
        console.print("[yellow]missing[/]: the backend keeps no such statistic; --allow-missing served 0 / {} / nothing.")


def ops_json(used: Sequence[UsedOp]) -> list[dict[str, Any]]:
    """The ``ops`` key of the JSON report (``accel run --ops``): one entry per ATen operator run on the device."""
    rows = []
    for u in used:
        row: dict[str, Any] = {"op": u.op, "calls": u.calls, "status": None}
        if u.support is not None:
            s = u.support
            row.update(status=s.status, detail=s.detail, source=s.source, release=s.release)
        rows.append(row)
    return rows


def print_ops_table(used: Sequence[UsedOp], backend: str, device_type: str, file: IO[str] | None = None) -> None:
    """Print the operators a run used on the device (``accel run --ops``), documented ones first."""
    import sys

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    out = file or sys.stderr
    console = Console(file=out, width=None if out.isatty() else 160)
    if not used:
        console.print(escape(f"accel run --ops: no ATen operator ran on a {device_type!r} tensor."))
        return
    documented = [u for u in used if u.support is not None]
    table = Table(title=escape(f"ATen operators run on {device_type!r} (backend {backend!r})"), title_justify="left")
    for col, kw in (("operator", {}), ("calls", {"justify": "right"}), ("documented", {}), ("source", {})):
        table.add_column(col, **kw)  # type: ignore[arg-type]
    for u in used:
        s = u.support
        mark = f"[bold yellow]{escape(s.status)}[/]: {escape(s.detail)}" if s else "-"
        where = escape(f"{s.source}, {s.release}" if s and s.release else (s.source if s else ""))
        table.add_row(escape(u.op), str(u.calls), mark, where)
    console.print(table)
    console.print(
        f"{len(used)} operator{'s' * (len(used) != 1)}, {len(documented)} documented by the vendor as not native; "
        "'-': nothing documented (unknown, not necessarily native)."
    )
