"""Compare the runs of a parity check: per-step losses against the first backend, and step times.

A run passes when it logged the same steps as the reference and, at every step,
``|value - reference| <= atol + rtol * |reference|``. With both tolerances zero that is
bitwise equality (two NaNs at the same step count as equal).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .runner import BackendRun

__all__ = ["Comparison", "ParityResult", "compare_runs", "median_step_time"]


@dataclass
class Comparison:
    """One backend's run against the reference run."""

    label: str
    reference: str
    ok: bool  # the run produced metrics
    error: str = ""
    steps: int = 0
    steps_compared: int = 0
    missing_steps: list[int] = field(default_factory=list)  # in one run but not the other
    bitwise: bool = False
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    first_diverging_step: int | None = None  # first step that differs at all
    first_exceeding_step: int | None = None  # first step beyond the tolerance
    final_value: float | None = None
    median_step_time: float | None = None
    step_time_ratio: float | None = None  # median step time / the reference's
    passed: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ParityResult:
    metric: str
    rtol: float
    atol: float
    comparisons: list[Comparison]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    @property
    def failed_runs(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.ok]


def median_step_time(run: BackendRun, key: str = "step_time") -> float | None:
    """Median of ``key`` over the run's steps, leaving out the first (warm-up) step when there are 3 or more."""
    times = [v for _, v in sorted(run.series(key).items())]
    if len(times) >= 3:
        times = times[1:]
    return statistics.median(times) if times else None


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def compare_runs(
    runs: Sequence[BackendRun], metric: str = "loss", rtol: float = 0.0, atol: float = 0.0
) -> ParityResult:
    """Compare each run's ``metric`` per step with the first run's (the reference)."""
    if rtol < 0 or atol < 0:
        raise ValueError(f"tolerances must be >= 0 (rtol={rtol}, atol={atol})")
    ref_run = runs[0]
    ref = ref_run.series(metric) if ref_run.ok else {}
    ref_time = median_step_time(ref_run) if ref_run.ok else None
    out = []
    for run in runs:
        c = Comparison(run.label, ref_run.label, ok=run.ok, error=run.error)
        if not run.ok:
            out.append(c)
            continue
        values = run.series(metric)
        c.steps = len(values)
        c.median_step_time = median_step_time(run)
        if c.median_step_time is not None and ref_time:
            c.step_time_ratio = c.median_step_time / ref_time
        if values:
            c.final_value = values[max(values)]
        if not ref_run.ok:
            c.error = f"reference run {ref_run.label!r} failed"
            out.append(c)
            continue
        if not values:
            c.error = f"logged no {metric!r} values"
            out.append(c)
            continue
        c.missing_steps = sorted(set(ref) ^ set(values))
        common = sorted(set(ref) & set(values))
        c.steps_compared = len(common)
        max_abs = max_rel = 0.0
        for step in common:
            a, b = values[step], ref[step]
            if _same(a, b):
                continue
            if c.first_diverging_step is None:
                c.first_diverging_step = step
            diff = abs(a - b) if not (math.isnan(a) or math.isnan(b)) else math.inf
            max_abs = max(max_abs, diff)
            max_rel = max(max_rel, diff / abs(b) if b != 0 else math.inf)
            if c.first_exceeding_step is None and not diff <= atol + rtol * abs(b):
                c.first_exceeding_step = step
        c.max_abs_diff, c.max_rel_diff = max_abs, max_rel
        c.bitwise = c.first_diverging_step is None and not c.missing_steps
        if c.missing_steps and c.first_exceeding_step is None:
            c.first_exceeding_step = c.missing_steps[0]
        c.passed = c.first_exceeding_step is None and not c.missing_steps
        out.append(c)
    return ParityResult(metric, rtol, atol, out)
