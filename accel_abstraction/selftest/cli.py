"""``accel test``: run the bundled self-test and print a short verdict (see :mod:`accel_abstraction.selftest`)."""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

from ..errors import ConfigError

__all__ = ["add_parser", "run_test"]

#: Per-step tolerance against the CPU: 0 would fail real hardware, whose kernels round
#: differently; an emulation that computes on the CPU agrees bit for bit, and the verdict says so.
DEFAULT_RTOL = 1e-3


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``test`` subcommand."""
    parser = subparsers.add_parser(
        "test",
        help="self-test: train a bundled tiny model on cpu and every backend that runs here, compare",
        description="Train the bundled tiny model once on cpu and once on every other backend this machine "
        "can run or emulate (each in its own process, as accel parity does), compare the per-step losses "
        "with the CPU's, and print one verdict per backend. Exit 0 when all agree, 1 otherwise.",
    )
    parser.add_argument(
        "--backends", metavar="NAMES",
        help="comma-separated backends to compare with cpu (default: every one that runs here, emulated or not)",
    )  # fmt: skip
    parser.add_argument("--rtol", type=float, default=DEFAULT_RTOL, help=f"relative tolerance per step (default {DEFAULT_RTOL:g})")
    parser.add_argument("--steps", type=int, default=12, help="training steps (default 12)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the runs' metrics and logs in DIR")
    parser.set_defaults(func=run_test)


def _backends(raw: str | None) -> list[str]:
    from ..emulation import runnable_backends

    if raw is None:
        names = runnable_backends()
    else:
        names = [part.strip() for part in raw.split(",") if part.strip()]
        if not names:
            raise ConfigError(f"--backends {raw!r} names no backend; give one or more, e.g. --backends NAME (accel info lists them)")
    return ["cpu", *[n for n in dict.fromkeys(names) if n != "cpu"]]


def run_test(args: argparse.Namespace) -> int:
    if not (math.isfinite(args.rtol) and args.rtol >= 0):
        raise ConfigError(f"--rtol must be a finite number >= 0 (got {args.rtol})")
    if args.steps < 2:
        raise ConfigError(f"--steps must be 2 or more (got {args.steps})")
    backends = _backends(args.backends)
    print(f"accel test: a tiny MLP, {args.steps} steps, on {', '.join(backends)}", flush=True)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        return _run(backends, args, args.keep)
    with tempfile.TemporaryDirectory(prefix="accel-test-") as tmp:
        return _run(backends, args, Path(tmp))


def _run(backends: list[str], args: argparse.Namespace, out: Path) -> int:
    from ..exits import terminate_on_sigterm
    from ..parity.compare import compare_runs
    from ..parity.runner import run_backends
    from . import SCRIPT

    with terminate_on_sigterm():
        runs = run_backends(SCRIPT, ["--steps", str(args.steps)], backends, out, progress=False, timeout=600)
    result = compare_runs(runs, rtol=args.rtol)
    emulated = {run.label for run in runs if any(k.endswith("_EMULATE") for k in run.env)}
    reference = runs[0].series("loss")
    learned = len(reference) >= 2 and reference[max(reference)] < reference[min(reference)]
    width = max(len(c.label) + 1 for c in result.comparisons)
    failed = False
    for c in result.comparisons:
        label = (c.label + ("*" if c.label in emulated else "")).ljust(width)
        if not c.ok:
            verdict, failed = f"FAILED: {c.error}", True
        elif c.label == c.reference:
            verdict = f"reference: final loss {c.final_value:.6f}" if learned else "FAILED: the loss did not fall"
            failed = failed or not learned
        elif c.passed:
            verdict = "match, bit for bit" if c.bitwise else f"match within rtol {args.rtol:g} (max rel diff {c.max_rel_diff:.2g})"
        else:
            verdict, failed = f"FAILED: {c.verdict}" + (f" ({'; '.join(c.problems)})" if c.problems else ""), True
        print(f"  {label} {verdict}")
    if emulated:
        print("  * emulated on the CPU (accel_abstraction.emulation: the rule accel parity and pytest follow)")
    if len(backends) == 1:
        print("  only cpu runs here: nothing to compare it with (install a backend's plugin: pip install 'accel-abstraction[BACKEND]', docs/install.md)")
    if failed:
        logs = ", ".join(r.log_path for r in runs if r.log_path) if args.keep is not None else "rerun with --keep DIR for the logs"
        print(f"accel test: FAILED ({logs})")
        return 1
    print(f"accel test: passed on {len(backends)} backend(s)")
    sys.stdout.flush()
    return 0
