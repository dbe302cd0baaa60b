"""Present a parity check: a rich table on the terminal and ``parity.json`` for machines."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .compare import ParityResult
from .runner import BackendRun

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["build_table", "print_report", "to_json", "write_json"]

SCHEMA_VERSION = 1


def _num(value: float | None, fmt: str) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return format(value, fmt)


def build_table(result: ParityResult, runs: Sequence[BackendRun]) -> Table:
    from rich.table import Table

    tol = (
        "bitwise" if result.rtol == 0 and result.atol == 0 else f"rtol={result.rtol:g}, atol={result.atol:g}"
    )
    from rich import box

    emulated = {run.label for run in runs if any(k.endswith("_EMULATE") for k in run.env)}
    table = Table(
        title=f"Parity of {result.metric!r} per step ({tol}), reference {result.comparisons[0].reference!r}",
        caption="* emulated on the CPU" if emulated else None,
        box=box.SIMPLE_HEAVY,
        pad_edge=False,
    )
    for header, justify in [
        ("backend", "left"), ("steps", "right"), (f"final\n{result.metric}", "right"), ("bitwise", "center"),
        ("max abs\ndiff", "right"), ("max rel\ndiff", "right"), ("first\ndiff", "right"),
        ("median\nstep", "right"), ("vs\nref", "right"), ("result", "left"),
    ]:  # fmt: skip
        table.add_column(header, justify=justify, no_wrap=header != "result")  # type: ignore[arg-type]
    for c in result.comparisons:
        name = c.label + ("*" if c.label in emulated else "")
        if not c.ok:
            table.add_row(_escape(name), *["-"] * 8, f"[red]failed: {_escape(c.error)}")
            continue
        is_ref = c.label == c.reference
        if c.passed:
            verdict = "[green]reference" if is_ref else "[green]match"
        elif c.error:
            verdict = f"[red]{_escape(c.error)}"
        else:
            verdict = "[red]diverged"
            if c.missing_steps:
                verdict += f" ({len(c.missing_steps)} steps only in one run)"
        first = c.first_diverging_step
        table.add_row(
            _escape(name),
            str(c.steps),
            _num(c.final_value, ".6f"),
            "-" if is_ref else ("[green]yes" if c.bitwise else "[yellow]no"),
            "-" if is_ref else _num(c.max_abs_diff, ".3g"),
            "-" if is_ref else _num(c.max_rel_diff, ".3g"),
            "-" if is_ref or first is None else str(first),
            "-" if c.median_step_time is None else f"{c.median_step_time * 1e3:.1f} ms",
            _num(c.step_time_ratio, ".2f") + ("x" if c.step_time_ratio is not None else ""),
            verdict,
        )
    return table


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def print_report(result: ParityResult, runs: Sequence[BackendRun], console: Console | None = None) -> None:
    from rich.console import Console

    console = console or Console()
    console.print(build_table(result, runs))
    if result.passed:
        console.print(
            f"[green]parity: every backend matches {result.comparisons[0].reference!r} within tolerance"
        )
    else:
        bad = [c.label for c in result.comparisons if not c.passed]
        console.print(
            f"[red]parity: {', '.join(bad)} did not match (see the table; logs are in the output folder)"
        )


def _finite(value: Any) -> Any:
    """JSON has no inf/nan: write them as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def to_json(
    result: ParityResult, runs: Sequence[BackendRun], script: str, script_args: Sequence[str]
) -> dict[str, Any]:
    runs_out = []
    for run in runs:
        loss = run.series(result.metric)
        times = run.series("step_time")
        runs_out.append(
            {
                "label": run.label,
                "backend": run.backend,
                "env": run.env,
                "returncode": run.returncode,
                "error": run.error,
                "wall_time": run.wall_time,
                "metrics_file": run.metrics_path,
                "log_file": run.log_path,
                "steps": sorted(loss),
                result.metric: [_finite(loss[s]) for s in sorted(loss)],
                "step_time": [times.get(s) for s in sorted(loss)],
            }
        )
    return {
        "schema_version": SCHEMA_VERSION,
        "script": script,
        "script_args": list(script_args),
        "metric": result.metric,
        "tolerance": {"rtol": result.rtol, "atol": result.atol},
        "reference": result.comparisons[0].reference,
        "passed": result.passed,
        "comparisons": [{k: _finite(v) for k, v in c.as_dict().items()} for c in result.comparisons],
        "runs": runs_out,
    }


def write_json(data: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path
