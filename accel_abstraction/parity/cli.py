"""``accel parity SCRIPT [--backends cpu,neuron] [--rtol R --atol A] [--out DIR] [-- script args]``.

Runs SCRIPT once per backend (each in its own process, only ``ACCEL_BACKEND`` changed),
compares the per-step values it logs with ``accel.log_metric`` against the first backend,
prints a table and writes ``parity.json`` and ``parity.png`` into ``--out``.

Exit status: 0 every backend matches within the tolerance; 1 a backend diverged beyond it;
2 a run failed (or could not start), or the command line was wrong.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import AccelError, ConfigError

__all__ = ["add_parser", "run"]

EXIT_MATCH, EXIT_DIVERGED, EXIT_FAILED = 0, 1, 2


def _add_options(p: argparse.ArgumentParser, defaults: bool = True) -> None:
    d = (lambda value: value) if defaults else (lambda value: argparse.SUPPRESS)
    p.add_argument(
        "--backends",
        default=d(None),
        metavar="NAMES",
        help="comma-separated backends, the first one is the reference (default: every registered backend available here)",
    )
    p.add_argument(
        "--rtol", type=float, default=d(0.0), help="relative tolerance per step (default 0: bitwise)"
    )
    p.add_argument(
        "--atol", type=float, default=d(0.0), help="absolute tolerance per step (default 0: bitwise)"
    )
    p.add_argument("--metric", default=d("loss"), help="the logged value to compare (default: loss)")
    p.add_argument(
        "--out", type=Path, default=d(Path("parity-out")), help="output folder (default: parity-out/)"
    )
    p.add_argument("--timeout", type=float, default=d(None), metavar="SECONDS", help="limit for each run")
    p.add_argument(
        "--no-plot", action="store_true", default=d(False), help="skip the PNG (no matplotlib needed)"
    )
    p.add_argument("--no-progress", action="store_true", default=d(False), help="no progress bars")  # fmt: skip


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "parity",
        help="run a training script on several backends and compare its per-step losses",
        description=__doc__.split("\n\n", 1)[1].split("\n\nExit")[0],
        epilog="exit status: 0 match, 1 diverged beyond the tolerance, 2 a run failed. "
        "Example: accel parity examples/train.py --backends cpu,neuron -- --steps 50",
    )
    _add_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="SCRIPT [options] [-- script args]")
    p.set_defaults(func=run)


def _split(args: argparse.Namespace) -> tuple[argparse.Namespace, str, list[str]]:
    """Parse the options that follow SCRIPT; what follows ``--`` belongs to the script."""
    rest: list[str] = list(args.command)
    if rest and rest[0] == "--":
        rest = rest[1:]
    if not rest:
        raise ConfigError(
            "accel parity needs a SCRIPT to run (accel parity examples/train.py --backends cpu,neuron)"
        )
    script, rest = rest[0], rest[1:]
    script_args: list[str] = []
    if "--" in rest:
        i = rest.index("--")
        rest, script_args = rest[:i], rest[i + 1 :]
    later = argparse.ArgumentParser(prog="accel parity SCRIPT", add_help=False)
    _add_options(later, defaults=False)
    parsed, unknown = later.parse_known_args(rest)
    if unknown:
        raise ConfigError(
            f"accel parity: unrecognized option(s) {' '.join(unknown)}; arguments for the script go after '--' "
            f"(accel parity {script} --backends ... -- {' '.join(unknown)})"
        )
    merged = argparse.Namespace(**{**vars(args), **vars(parsed)})
    return merged, script, script_args


def _backends(raw: str | None) -> list[str]:
    if raw:
        names = [part.strip() for part in raw.split(",") if part.strip()]
        if names:
            return names
        raise ConfigError(f"--backends {raw!r} names no backend")
    from .runner import available_backends

    return available_backends()


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from .compare import compare_runs
    from .report import print_report, to_json, write_json
    from .runner import run_backends

    args, script, script_args = _split(args)
    if not Path(script).is_file():
        raise ConfigError(f"accel parity: script {script!r} does not exist")
    if args.rtol < 0 or args.atol < 0:
        raise ConfigError(f"--rtol and --atol must be >= 0 (got {args.rtol}, {args.atol})")
    backends = _backends(args.backends)
    out: Path = args.out
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 130))  # a log file or CI: keep the table readable
    console.print(f"accel parity: {script} {' '.join(script_args)} on {', '.join(backends)} -> {out}/")
    progress = not args.no_progress
    runs = run_backends(
        script, script_args, backends, out, progress=progress, timeout=args.timeout, metric=args.metric
    )
    result = compare_runs(runs, metric=args.metric, rtol=args.rtol, atol=args.atol)
    print_report(result, runs, console)
    json_path = write_json(to_json(result, runs, script, script_args), out / "parity.json")
    written = [str(json_path)]
    if not args.no_plot:
        from .plot import plot_runs

        try:
            written.append(str(plot_runs(runs, out / "parity.png", args.metric)))
        except AccelError as exc:
            console.print(f"[yellow]accel parity: {escape(str(exc))}")
    console.print("wrote " + ", ".join(written))
    for c in result.failed_runs:
        log = next(r.log_path for r in runs if r.label == c.label)
        console.print(f"[red]{escape(c.label)}: {escape(c.error)}[/red] (log: {log})", highlight=False)
    if result.failed_runs or any(c.error for c in result.comparisons):
        return EXIT_FAILED
    return EXIT_MATCH if result.passed else EXIT_DIVERGED
