"""``accel parity --locate``: re-run the first divergent step of both legs with fingerprints, name where they part.

For each backend whose run 0 differs from the reference's run 0 (bitwise, or beyond the
tolerance), the step ``S`` where it first does is re-run: the script runs again (same seeds)
with :mod:`.fingerprint` armed for ``S`` and the step before it (so a gradient or optimizer
difference at ``S - 1`` is seen where it starts), and ends once ``S`` is logged. The
reference's fingerprints come from a re-run too, or from a recording made with ``--record
FILE --locate`` (which fingerprints every step of run 0), so a GPU recording can locate a
Trainium divergence without both machines at once. :func:`.locate.first_difference` then
names the first module, and the first ATen op inside it, that differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .compare import ParityResult, compare_runs
from .locate import Finding, first_difference
from .pattern import MetricPattern
from .runner import plan_runs, run_planned
from .runs import BackendRun

__all__ = ["divergent_step", "locate_all"]


def divergent_step(ref: BackendRun, run: BackendRun, metric: str, rtol: float, atol: float) -> int | None:
    """The first step where ``run`` differs from ``ref`` beyond the tolerance (``None``: nowhere)."""
    c = compare_runs([ref, run], metric=metric, rtol=rtol, atol=atol).comparisons[1]
    if not c.ok or c.error:
        return None
    candidates = [s for s in (c.first_exceeding_step, c.first_nonfinite_step) if s is not None]
    return min(candidates) if candidates else None


def _rerun(
    run: BackendRun, positions: str, out: Path, script: str, script_args: Sequence[str], options: dict[str, Any]
) -> BackendRun:
    again = plan_runs(
        [run.backend], out, redirect=bool(run.redirect_report), pattern=options.get("pattern"),
        fingerprint_steps=positions, suffix=f"-{run.group.replace('#', '-')}-locate",
    )[0]  # fmt: skip
    again.label = again.group = f"{run.label} (locate)"
    run_planned([again], script, script_args, extra_env={"ACCEL_PARITY_FINGERPRINT_STOP": "1"}, **options)
    return again


def locate_all(
    result: ParityResult,
    runs: Sequence[BackendRun],
    script: str,
    script_args: Sequence[str],
    out: Path,
    *,
    metric: str,
    rtol: float,
    atol: float,
    progress: bool = True,
    timeout: float | None = None,
    pattern: MetricPattern | None = None,
    allow_missing: bool = False,
) -> list[dict[str, Any]]:
    """One entry per backend that did not pass: ``{label, reference, step, finding, note}``."""
    first: dict[str, BackendRun] = {}
    for run in runs:
        first.setdefault(run.group, run)  # run 0 of each backend (runs come seed 0 first)
    ref = first[result.comparisons[0].label] if result.comparisons[0].label in first else runs[0]
    options: dict[str, Any] = {
        "progress": progress, "timeout": timeout, "metric": metric, "pattern": pattern, "allow_missing": allow_missing,
    }  # fmt: skip
    steps = sorted(ref.series(metric))
    ref_cache: dict[str, list[dict[str, Any]]] = {}
    found = []
    for c in result.comparisons[1:]:
        if c.passed or not c.ok or c.error or c.label not in first:
            continue
        run = first[c.label]
        entry: dict[str, Any] = {"label": c.label, "reference": ref.label, "step": None, "finding": None, "note": ""}
        found.append(entry)
        step = divergent_step(ref, run, metric, rtol, atol)
        if step is None:
            entry["note"] = f"run 0 of {run.label} agrees with {ref.label}'s step by step: nothing to locate"
            continue
        entry["step"] = step
        pos = steps.index(step) if step in steps else len(steps)
        wanted = sorted({max(pos - 1, 0), pos})
        spec = ",".join(map(str, wanted))
        if ref.recorded_from:
            ref_entries = [e for e in ref.fingerprints if e.get("pos") in wanted]
            if not ref_entries:
                entry["note"] = (
                    f"the recording {ref.recorded_from} has no fingerprints of step {step}: record it with "
                    "--record FILE --locate to locate against it"
                )
                continue
        else:
            if spec not in ref_cache:
                ref_cache[spec] = _rerun(ref, spec, out, script, script_args, options).fingerprints
            ref_entries = ref_cache[spec]
        again = _rerun(run, spec, out, script, script_args, options)
        if again.error:
            entry["note"] = f"the re-run of {run.label} failed: {again.error}"
            continue
        finding: Finding | None = first_difference(ref_entries, again.fingerprints, steps, rtol, atol)
        if finding is None:
            entry["note"] = (
                f"no module output or gradient differs at step {step} or the step before: the difference "
                "arises outside modules (the loss, the optimizer, or code between steps)"
            )
        else:
            entry["finding"] = finding.as_dict()
            entry["note"] = finding.sentence()
    return found
