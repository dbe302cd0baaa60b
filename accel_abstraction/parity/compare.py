"""Compare the runs of a parity check: per-step values against the first run, and step times.

A run passes when it logged exactly the reference's steps and, at every step,
``|value - reference| <= atol + rtol * |reference|``. With both tolerances zero that is
bitwise equality. Honest verdicts, whatever the tolerance:

* NaN and infinities never match a finite reference, and a non-finite value in any run
  (the reference included) fails it, unless ``allow_nonfinite``: then the same non-finite
  value at the same step in both runs (NaN and NaN, +inf and +inf) counts as equal;
* a run that logs fewer steps than the reference, or fewer than it declared
  (``accel.log_settings(steps=N)``), "stopped early"; a gap or an extra step fails too;
* a run that logs nothing, or exits non-zero, is a failed run (``error``), not a mismatch.

Each failing run carries ``problems``: sentences with the step and the values.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .runs import BackendRun

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
    first_nonfinite_step: int | None = None  # first step whose value is NaN or infinite
    final_value: float | None = None
    median_step_time: float | None = None
    step_time_ratio: float | None = None  # median step time / the reference's
    verdict: str = ""  # short: "match", "diverged at step 3", "stopped early (5/8 steps)", ...
    problems: list[str] = field(default_factory=list)  # why it did not pass, with steps and values
    passed: bool = False
    statistics: dict[str, Any] | None = None  # --seeds: the windows' tests (.ensemble), else None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ParityResult:
    metric: str
    rtol: float
    atol: float
    comparisons: list[Comparison]
    allow_nonfinite: bool = False
    mode: str = "per-step"  # or "statistical" (--seeds, .ensemble)
    alpha: float | None = None  # the statistical verdict's false-alarm rate per comparison

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    @property
    def failed_runs(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.ok]


def median_step_time(run: BackendRun, key: str = "step_time") -> float | None:
    """Median of ``key`` over the run's steps, leaving out the first (warm-up) step when there are 3 or more."""
    times = [v for _, v in sorted(run.series(key).items()) if math.isfinite(v)]
    if len(times) >= 3:
        times = times[1:]
    return statistics.median(times) if times else None


def _span(steps: Sequence[int]) -> str:
    if not steps:
        return "no steps"
    return f"steps {steps[0]}..{steps[-1]} ({len(steps)})" if len(steps) > 1 else f"step {steps[0]} (1)"


def _few(steps: Sequence[int], n: int = 5) -> str:
    shown = ", ".join(map(str, steps[:n]))
    return shown + (f" and {len(steps) - n} more" if len(steps) > n else "")


def _step_problems(c: Comparison, steps: list[int], ref_steps: list[int], declared: Any) -> None:
    """Steps missing, extra, or fewer than declared: sentences into ``c.problems``."""
    have, want = set(steps), set(ref_steps)
    missing, extra = sorted(want - have), sorted(have - want)
    c.missing_steps = sorted(set(missing) | set(extra))
    if missing and steps and min(missing) > steps[-1]:
        c.problems.append(f"stopped early: logged {_span(steps)}, the reference {_span(ref_steps)}")
        c.verdict = c.verdict or f"stopped early ({len(steps)}/{len(ref_steps)} steps)"
    elif missing:
        c.problems.append(f"missing step(s) {_few(missing)} that the reference logged")
        c.verdict = c.verdict or f"{len(missing)} steps missing"
    if extra:
        c.problems.append(f"logged step(s) {_few(extra)} that the reference did not")
        c.verdict = c.verdict or f"{len(extra)} extra steps"
    if isinstance(declared, int) and not isinstance(declared, bool) and len(steps) < declared:
        c.problems.append(f"stopped early: logged {len(steps)} of the {declared} steps it declared")
        c.verdict = c.verdict or f"stopped early ({len(steps)}/{declared} steps)"


def _equal(a: float, b: float, allow_nonfinite: bool) -> bool:
    if math.isfinite(a) and math.isfinite(b):
        return a == b
    return allow_nonfinite and (a == b or (math.isnan(a) and math.isnan(b)))


def compare_runs(
    runs: Sequence[BackendRun],
    metric: str = "loss",
    rtol: float = 0.0,
    atol: float = 0.0,
    allow_nonfinite: bool = False,
) -> ParityResult:
    """Compare each run's ``metric`` per step with the first run's (the reference)."""
    if rtol < 0 or atol < 0:
        raise ValueError(f"tolerances must be >= 0 (rtol={rtol}, atol={atol})")
    ref_run = runs[0]
    ref = ref_run.series(metric) if ref_run.ok else {}
    ref_steps = sorted(ref)
    ref_time = median_step_time(ref_run) if ref_run.ok else None
    out = []
    for run in runs:
        c = Comparison(run.label, ref_run.label, ok=run.ok, error=run.error)
        out.append(c)
        if not run.ok:
            c.verdict = f"failed: {run.error}"
            continue
        values = run.series(metric)
        steps = sorted(values)
        c.steps = len(values)
        c.median_step_time = median_step_time(run)
        if c.median_step_time is not None and ref_time:
            c.step_time_ratio = c.median_step_time / ref_time
        if values:
            c.final_value = values[steps[-1]]
        if not ref_run.ok:
            c.error = f"reference run {ref_run.label!r} failed"
            c.verdict = c.error
            continue
        if not values:
            c.error = f"logged no {metric!r} values"
            c.verdict = c.error
            continue
        bad = [s for s in steps if not math.isfinite(values[s])]
        if bad:
            c.first_nonfinite_step = bad[0]
            if not allow_nonfinite:
                c.problems.append(
                    f"{metric} is {values[bad[0]]} at step {bad[0]} ({len(bad)} non-finite step(s)): "
                    "NaN/inf never match (--allow-nonfinite accepts the same non-finite value in both runs)"
                )
                c.verdict = f"{values[bad[0]]} at step {bad[0]}"
        _step_problems(c, steps, ref_steps, run.settings.get("steps"))
        common = [] if run is ref_run else sorted(set(ref) & set(values))
        c.steps_compared = len(values) if run is ref_run else len(common)
        max_abs = max_rel = 0.0
        for step in common:
            a, b = values[step], ref[step]
            if _equal(a, b, allow_nonfinite):
                continue
            if c.first_diverging_step is None:
                c.first_diverging_step = step
            finite = math.isfinite(a) and math.isfinite(b)
            diff = abs(a - b) if finite else math.inf
            max_abs = max(max_abs, diff)
            max_rel = max(max_rel, diff / abs(b) if finite and b != 0 else math.inf)
            bound = atol + rtol * abs(b)
            if c.first_exceeding_step is None and not (finite and diff <= bound):
                c.first_exceeding_step = step
                why = (
                    f"|diff| {diff:.3g} > {bound:.3g} = atol {atol:g} + rtol {rtol:g} * |reference|"
                    if finite
                    else "NaN/inf never match a different value"
                )
                if step != c.first_nonfinite_step or allow_nonfinite:  # else said above already
                    c.problems.append(f"diverged at step {step}: {metric} {a!r} vs reference {b!r} ({why})")
                c.verdict = c.verdict or f"diverged at step {step}"
        c.max_abs_diff, c.max_rel_diff = max_abs, max_rel
        c.bitwise = c.first_diverging_step is None and not c.missing_steps
        if c.missing_steps and c.first_exceeding_step is None:
            c.first_exceeding_step = c.missing_steps[0]
        c.passed = not c.problems
        if c.passed:
            c.verdict = "reference" if run is ref_run else "match"
    return ParityResult(metric, rtol, atol, out, allow_nonfinite)
