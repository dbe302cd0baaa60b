"""The statistical verdict of ``accel parity --seeds N``: each backend's runs against the reference's.

The steps every run logged are cut into windows (:func:`.stats.windows`); per run, the
metric's mean over each window is one value. Per window, Welch's t-test compares the
backend's values with the reference's (the run-to-run noise measured in the same invocation,
or recorded with ``--record``); Holm's method adjusts the windows' p-values so that one
comparison's chance of a false "diverged" is at most ``alpha`` over all its windows. A
window diverges when its adjusted p-value is <= ``alpha`` *and* its mean differs by more
than ``atol + rtol * |reference mean|`` (a tolerance, when given, is the smallest difference
that matters). The first diverging window names the step.

Failed runs, NaN/inf and missing or extra steps are judged as in :mod:`.compare` (a
non-finite window mean cannot be tested: it fails the run).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import stats
from .compare import Comparison, ParityResult, _step_problems, median_step_time
from .runs import BackendRun

__all__ = ["DEFAULT_ALPHA", "DEFAULT_WINDOWS", "compare_ensembles"]

DEFAULT_ALPHA = 0.05
DEFAULT_WINDOWS = 10


@dataclass
class _Group:
    label: str
    runs: list[BackendRun]

    @property
    def failed(self) -> list[BackendRun]:
        return [r for r in self.runs if not r.ok]


def groups_of(runs: Sequence[BackendRun]) -> list[_Group]:
    """Runs by backend leg (``group``), in order of first appearance."""
    out: dict[str, _Group] = {}
    for run in runs:
        out.setdefault(run.group, _Group(run.group, [])).runs.append(run)
    return list(out.values())


def _fmt(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.6g}"


def _spread(sd: float, runs: int) -> str:
    return "1 run" if runs == 1 else f"sd {_fmt(sd)} over {runs} runs"


def _window_means(run: BackendRun, metric: str, windows: list[list[int]]) -> list[float]:
    values = run.series(metric)
    return [statistics.fmean(values[s] for s in w) for w in windows]


def compare_ensembles(
    runs: Sequence[BackendRun],
    metric: str = "loss",
    rtol: float = 0.0,
    atol: float = 0.0,
    alpha: float = DEFAULT_ALPHA,
    n_windows: int = DEFAULT_WINDOWS,
) -> ParityResult:
    """Compare each backend's runs (grouped by ``run.group``) with the first group's, window by window."""
    groups = groups_of(runs)
    ref = groups[0]
    out = []
    ref_ok = not ref.failed
    base = ref.runs[0]
    ref_steps = sorted(base.series(metric)) if ref_ok else []
    for group in groups:
        first = group.runs[0]
        c = Comparison(group.label, ref.label, ok=not group.failed)
        out.append(c)
        if group.failed:
            bad = group.failed[0]
            c.error = f"run {bad.label} failed: {bad.error}" + (
                f" (and {len(group.failed) - 1} more)" if len(group.failed) > 1 else ""
            )
            c.verdict = f"failed: {c.error}"
            continue
        finals = [r.series(metric)[max(r.series(metric))] for r in group.runs if r.series(metric)]
        c.final_value = statistics.fmean(finals) if finals else None
        c.steps = len(first.series(metric))
        c.median_step_time = median_step_time(first)
        if not ref_ok:
            c.error = f"reference run {ref.failed[0].label!r} failed"
            c.verdict = c.error
            continue
        for run in group.runs:
            values = run.series(metric)
            if not values:
                c.error = f"run {run.label} logged no {metric!r} values"
                break
            bad_steps = [s for s in sorted(values) if not math.isfinite(values[s])]
            if bad_steps:
                c.first_nonfinite_step = bad_steps[0]
                c.problems.append(f"{run.label}: {metric} is {values[bad_steps[0]]} at step {bad_steps[0]}: NaN/inf never match")
                c.verdict = c.verdict or f"{values[bad_steps[0]]} at step {bad_steps[0]} ({run.label})"
            before = len(c.problems)
            _step_problems(c, sorted(values), ref_steps, run.settings.get("steps"))
            c.problems[before:] = [f"{run.label}: {p}" for p in c.problems[before:]]
        if c.error:
            c.verdict = c.error
            continue
        if group is not ref and first.series(metric) == base.series(metric):
            c.bitwise = True
        common = set(ref_steps)
        for run in [*ref.runs, *group.runs]:
            common &= set(run.series(metric))
        steps = sorted(common)
        c.steps_compared = len(steps)
        if c.first_nonfinite_step is not None or not steps:
            c.passed = False
            continue
        cut = stats.windows(steps, n_windows)
        ref_means = [_window_means(r, metric, cut) for r in ref.runs]
        means = [_window_means(r, metric, cut) for r in group.runs]
        noise = [statistics.stdev(col) if len(col) > 1 else math.nan for col in zip(*ref_means, strict=True)]
        info: dict[str, Any] = {
            "test": "welch-t per window, holm over windows",
            "alpha": alpha,
            "runs": len(group.runs),
            "reference_runs": len(ref.runs),
            "seeds": [r.seed_index for r in group.runs],
            "reference_seeds": [r.seed_index for r in ref.runs],
            "noise": [_nan_none(v) for v in noise],
            "windows": [],
        }
        c.statistics = info
        if group is ref:
            c.passed = not c.problems
            c.verdict = "reference" if c.passed else c.verdict
            info["windows"] = [{"first": w[0], "last": w[-1], "mean": statistics.fmean(col), "sd": _nan_none(sd)}
                               for w, col, sd in zip(cut, zip(*ref_means, strict=True), noise, strict=True)]
            continue
        tests = [
            stats.welch([row[i] for row in ref_means], [row[i] for row in means]) for i in range(len(cut))
        ]
        adjusted = stats.holm([t.p for t in tests])
        max_diff = 0.0
        for w, test, p_adj in zip(cut, tests, adjusted, strict=True):
            diff = test.mean - test.mean_ref
            bound = atol + rtol * abs(test.mean_ref)
            rejected = p_adj <= alpha and abs(diff) > bound
            max_diff = max(max_diff, abs(diff))
            info["windows"].append({
                "first": w[0], "last": w[-1], "mean_reference": test.mean_ref, "mean": test.mean,
                "sd_reference": _nan_none(test.sd_ref), "sd": _nan_none(test.sd), "t": _nan_none(test.t),
                "df": test.df, "p": test.p, "p_holm": p_adj, "diverged": rejected,
            })  # fmt: skip
            if rejected and c.first_exceeding_step is None:
                c.first_exceeding_step = c.first_diverging_step = w[0]
                c.problems.append(
                    f"diverged at steps {w[0]}..{w[-1]}: mean {metric} {_fmt(test.mean)} ({_spread(test.sd, len(group.runs))}) "
                    f"vs reference {_fmt(test.mean_ref)} ({_spread(test.sd_ref, len(ref.runs))}): "
                    f"Welch t = {test.t:.3g}, df {test.df:.3g}, p = {test.p:.3g}, "
                    f"Holm-adjusted {p_adj:.3g} <= alpha {alpha:g} over {len(cut)} windows"
                    + (f", |diff| {abs(diff):.3g} > {bound:.3g}" if bound else "")
                )
                c.verdict = c.verdict or f"diverged at step {w[0]}"
        c.max_abs_diff = max_diff
        info["min_p_holm"] = min(adjusted)
        c.passed = not c.problems
        if c.passed:
            c.verdict = "equivalent"
    result = ParityResult(metric, rtol, atol, out)
    result.mode, result.alpha = "statistical", alpha
    return result


def _nan_none(value: float) -> float | None:
    return None if math.isnan(value) else value
