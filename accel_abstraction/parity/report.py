"""Present a parity check: a rich table on the terminal and ``parity.json`` for machines.

``parity.json`` follows schema ``accel-parity`` version 3 (``docs/parity.md``); it is also the
recording format that ``--reference`` reads back (:mod:`.reference`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..safe_io import WriteError, atomic_write
from .compare import Comparison, ParityResult, median_step_time
from .reference import SCHEMA, SCHEMA_VERSION, encode_float, host_facts
from .runs import BackendRun

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["SCHEMA_VERSION", "build_table", "print_report", "to_json", "write_json"]


def _num(value: float | None, fmt: str) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return format(value, fmt)


def _table(title: str, caption: str | None, columns: Sequence[tuple[str, str]]) -> Table:
    """An empty report table: ``columns`` are (header, justify); only the last ("result") wraps."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAVY, pad_edge=False)
    for header, justify in columns:
        table.add_column(header, justify=justify, no_wrap=header != "result")  # type: ignore[arg-type]
    return table


def build_ensemble_table(result: ParityResult, runs: Sequence[BackendRun]) -> Table:
    """``--seeds``: one row per backend, its runs' spread and the windows' tests against the reference's."""
    emulated = {run.group for run in runs if any(k.endswith("_EMULATE") for k in run.env)}
    table = _table(
        f"Parity of {result.metric!r} over seeds (Welch t per window, Holm, alpha {result.alpha:g}), "
        f"reference {result.comparisons[0].reference!r}",
        "* emulated on the CPU" if emulated else None,
        [
            ("backend", "left"), ("runs", "right"), ("steps", "right"), (f"final\n{result.metric} (mean)", "right"),
            ("noise\n(sd)", "right"), ("max\n|diff|", "right"), ("min p\n(Holm)", "right"),
            ("seed 0\nbitwise", "center"), ("result", "left"),
        ],
    )  # fmt: skip
    for name, c in _compared(table, result, emulated):
        info = c.statistics or {}
        is_ref = c.label == c.reference
        sds = [w.get("sd_reference" if not is_ref else "sd") for w in info.get("windows", [])]
        sds = [v for v in sds if v is not None]
        table.add_row(
            name,
            str(info.get("runs", "-")),
            str(c.steps),
            _num(c.final_value, ".6f"),
            _num(max(sds), ".3g") if sds else "-",
            "-" if is_ref else _num(c.max_abs_diff, ".3g"),
            "-" if is_ref or "min_p_holm" not in info else _num(info["min_p_holm"], ".3g"),
            "-" if is_ref else ("[green]yes" if c.bitwise else "[yellow]no"),
            _verdict(c),
        )
    return table


def build_table(result: ParityResult, runs: Sequence[BackendRun]) -> Table:
    if result.mode == "statistical":
        return build_ensemble_table(result, runs)
    tol = (
        "bitwise" if result.rtol == 0 and result.atol == 0 else f"rtol={result.rtol:g}, atol={result.atol:g}"
    )
    emulated = {run.label for run in runs if any(k.endswith("_EMULATE") for k in run.env)}
    recorded = {run.label for run in runs if run.recorded_from}
    cross = bool(recorded) and result.comparisons[0].label in recorded
    notes = []
    if emulated:
        notes.append("* emulated on the CPU")
    if cross:
        notes.append(
            "x-machine: median step time / the recorded reference's, which was measured where and when "
            "it was recorded (another machine, load and versions): a cross-machine ratio, not a benchmark"
        )
    table = _table(
        f"Parity of {result.metric!r} per step ({tol}), reference {result.comparisons[0].reference!r}",
        "\n".join(notes) or None,
        [
            ("backend", "left"), ("steps", "right"), (f"final\n{result.metric}", "right"), ("bitwise", "center"),
            ("max abs\ndiff", "right"), ("max rel\ndiff", "right"), ("first\ndiff", "right"),
            ("median\nstep", "right"), ("x-machine\nvs ref" if cross else "vs\nref", "right"), ("result", "left"),
        ],
    )  # fmt: skip
    for name, c in _compared(table, result, emulated):
        is_ref = c.label == c.reference or bool(c.error)  # nothing was compared: no diff columns
        first = c.first_diverging_step
        table.add_row(
            name,
            str(c.steps),
            _num(c.final_value, ".6f"),
            "-" if is_ref else ("[green]yes" if c.bitwise else "[yellow]no"),
            "-" if is_ref else _num(c.max_abs_diff, ".3g"),
            "-" if is_ref else _num(c.max_rel_diff, ".3g"),
            "-" if is_ref or first is None else str(first),
            "-" if c.median_step_time is None else f"{c.median_step_time * 1e3:.1f} ms",
            _num(c.step_time_ratio, ".2f") + ("x" if c.step_time_ratio is not None else ""),
            _verdict(c),
        )
    return table


def _compared(table: Table, result: ParityResult, emulated: set[str]) -> Iterator[tuple[str, Comparison]]:
    """Each comparison that ran, with its row's name (``*`` marks an emulated backend).

    A leg that failed gets its row here, dashes and its error, and is not yielded.
    """
    for c in result.comparisons:
        name = _escape(c.label + ("*" if c.label in emulated else ""))
        if c.ok:
            yield name, c
        else:
            table.add_row(name, *["-"] * (len(table.columns) - 2), f"[red]failed: {_escape(c.error)}")


def _verdict(c: Comparison) -> str:
    return f"[green]{_escape(c.verdict)}" if c.passed else f"[red]{_escape(c.verdict)}"


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def print_report(result: ParityResult, runs: Sequence[BackendRun], console: Console | None = None) -> None:
    """The table, then one line per problem of each run that did not pass, then the verdict."""
    from .. import exits

    console = console or exits.console()
    console.print(build_table(result, runs))
    for c in result.comparisons:
        for problem in c.problems:
            console.print(f"[red]{_escape(c.label)}[/red]: {_escape(problem)}", highlight=False)
    if result.passed and len(result.comparisons) < 2:
        console.print(f"[yellow]parity: only {result.comparisons[0].reference!r} ran: nothing was compared")
    elif result.passed and result.mode == "statistical":
        console.print(
            f"[green]parity: every backend is equivalent to {result.comparisons[0].reference!r} over seeds "
            f"(no window beyond the run-to-run noise at a false-alarm rate of {result.alpha:g})"
        )
    elif result.passed:
        console.print(
            f"[green]parity: every backend matches {result.comparisons[0].reference!r} within tolerance"
        )
    else:
        bad = [c.label for c in result.comparisons if not c.passed]
        console.print(f"[red]parity: {_escape(', '.join(bad))} did not match (logs are in the output folder)")


def _run_json(run: BackendRun, metric: str) -> dict[str, Any]:
    values = run.series(metric)
    times = run.series("step_time")
    steps = sorted(values)
    return {
        "label": run.label,
        "backend": run.backend,
        "env": run.env,
        "recorded_from": run.recorded_from or None,
        "returncode": run.returncode,
        "error": run.error,
        "wall_time": run.wall_time,
        "metrics_file": run.metrics_path or None,
        "log_file": run.log_path or None,
        "redirect_report": run.redirect_report or None,
        "facts": run.facts,
        "settings": run.settings,
        "median_step_time": median_step_time(run),
        "steps": steps,
        metric: [values[s] for s in steps],
        "step_time": [times.get(s) for s in steps],
        "records": run.records,
        "group": run.group,
        "seed_index": run.seed_index,
        **({"fingerprints": run.fingerprints} if run.fingerprints else {}),
    }


def to_json(
    result: ParityResult,
    runs: Sequence[BackendRun],
    script: str,
    script_args: Sequence[str],
    context: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``parity.json`` document; ``context`` adds the invocation's keys (script hash, mode, reference)."""
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "script": script,
        "script_args": list(script_args),
        **(context or {}),
        "metric": result.metric,
        "tolerance": {"rtol": result.rtol, "atol": result.atol, "allow_nonfinite": result.allow_nonfinite},
        "verdict_mode": result.mode,
        "alpha": result.alpha,
        "reference": result.comparisons[0].reference,
        "host": host_facts(),
        "passed": result.passed,
        "comparisons": [c.as_dict() for c in result.comparisons],
        "runs": [_run_json(run, result.metric) for run in runs],
    }


def _encode_all(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _encode_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode_all(v) for v in value]
    return encode_float(value)


def write_json(data: dict[str, Any], path: Path) -> Path:
    """Write ``data`` to ``path`` atomically (a reader never sees half a file); NaN/inf as strings."""
    text = json.dumps(_encode_all(data), indent=1, allow_nan=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"cannot create the folder {path.parent}: {exc.strerror or exc}") from None
    return atomic_write(path, text)
