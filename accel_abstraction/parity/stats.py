"""The statistics behind ``accel parity --seeds N``: Welch's t-test per window of steps, Holm over windows.

Plain Python (no SciPy in the dev environment): Student's t distribution through the
regularized incomplete beta function (a continued fraction evaluated by Lentz's method),
accurate to ~1e-12 over the range parity uses. Why these tests is written down in
``docs/parity.md`` ("Statistical verdicts").

* :func:`welch`: two samples of window means (one per run) -> ``t``, degrees of freedom and the
  two-sided p-value. A side with a single run takes its spread from the other side (the
  prediction interval of one new run against a band: ``t = (x - mean) / (s * sqrt(1 + 1/n))``,
  ``n - 1`` degrees of freedom).
* :func:`holm`: Holm's step-down adjustment of the windows' p-values, so that the chance of
  any false "diverged" over all windows of one comparison is at most ``alpha``, whatever the
  windows' correlation.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TTest", "holm", "student_t_sf2", "welch", "windows"]


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` for ``a, b > 0``, ``0 <= x <= 1``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_sf2(t: float, df: float) -> float:
    """Two-sided tail probability ``P(|T| >= |t|)`` of Student's t with ``df`` degrees of freedom."""
    if math.isnan(t) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 0.0
    return betainc(df / 2.0, 0.5, df / (df + t * t))


@dataclass(frozen=True)
class TTest:
    """One window's test: the two means, their spreads (sample standard deviations), t, df, p."""

    mean_ref: float
    mean: float
    sd_ref: float
    sd: float
    t: float
    df: float
    p: float


def welch(ref: Sequence[float], other: Sequence[float]) -> TTest:
    """Welch's two-sample t-test of ``other`` against ``ref`` (at least three values in all).

    A side with one value borrows the other side's variance (a prediction interval); both
    spreads zero: ``p`` is 1 when the means are equal and 0 when they are not (no noise at all,
    so any difference is real).
    """
    n1, n2 = len(ref), len(other)
    if n1 < 1 or n2 < 1 or n1 + n2 < 3:
        raise ValueError(f"a t-test needs at least 3 values, one per side (got {n1} and {n2})")
    m1, m2 = statistics.fmean(ref), statistics.fmean(other)
    v1 = statistics.variance(ref) if n1 > 1 else None
    v2 = statistics.variance(other) if n2 > 1 else None
    if v1 is None or v2 is None:
        var = v2 if v1 is None else v1
        assert var is not None
        se2, df = var * (1.0 / n1 + 1.0 / n2), float((n2 if v1 is None else n1) - 1)
    else:
        a, b = v1 / n1, v2 / n2
        se2 = a + b
        df = se2 * se2 / ((a * a / (n1 - 1) if a else 0.0) + (b * b / (n2 - 1) if b else 0.0)) if se2 else 1.0
    diff = m2 - m1
    sd1, sd2 = math.sqrt(v1) if v1 is not None else math.nan, math.sqrt(v2) if v2 is not None else math.nan
    if se2 == 0.0:
        t = 0.0 if diff == 0 else math.copysign(math.inf, diff)
        return TTest(m1, m2, sd1, sd2, t, df, 1.0 if diff == 0 else 0.0)
    t = diff / math.sqrt(se2)
    return TTest(m1, m2, sd1, sd2, t, df, student_t_sf2(t, df))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (same order as given): reject where the adjusted value is <= alpha."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def windows(steps: Sequence[int], count: int) -> list[list[int]]:
    """``steps`` (sorted) cut into ``count`` contiguous windows of near-equal length (fewer if too few steps)."""
    count = max(1, min(count, len(steps)))
    size, extra = divmod(len(steps), count)
    out, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        out.append(list(steps[start:end]))
        start = end
    return out
