"""``accel parity SCRIPT [--backends cpu,neuron] [--rtol R --atol A] [--seeds N] [--out DIR] [-- script args]``.

Runs SCRIPT once per backend (each in its own process, only ``ACCEL_BACKEND`` changed),
compares the per-step values it logs with ``accel.log_metric`` against the first backend,
prints a table and writes ``parity.json`` and ``parity.png`` into ``--out``.
``--seeds N`` runs each backend N times with the script's seeds derived per run and judges
the backends' distributions against the run-to-run noise (Welch t per window of steps,
Holm-corrected: a false "diverged" at most ``--alpha`` of the time).
``--record ref.json`` also keeps the document (the whole ensemble) as a recording;
``--reference ref.json`` compares against a recorded run or ensemble (another machine,
another day) instead of the first backend. ``--locate`` re-runs the first divergent step with
every module's outputs and gradients fingerprinted and names the first module, and ATen op,
that differs. ``--redirect`` runs an unported CUDA script under the runtime redirect, and
``--metric REGEX`` reads its metrics from its output, so a script nobody edited can be compared.

Exit status: 0 every backend matches within the tolerance (or is equivalent over seeds);
1 a backend diverged (NaN/inf, missing or extra steps included); 2 a run failed (or could
not start), the command line was wrong, or fewer than two runs would be compared.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from ..errors import AccelError, ConfigError

__all__ = ["NothingToCompareError", "add_parser", "run"]


class NothingToCompareError(ConfigError):
    """Fewer than two runs would be compared (one backend, no ``--reference``, no ``--record``)."""

EXIT_MATCH, EXIT_DIVERGED, EXIT_FAILED = 0, 1, 2


def _add_options(p: argparse.ArgumentParser, defaults: bool = True) -> None:
    """The options, before SCRIPT or after it (``defaults=False``: only what is given is kept)."""

    def option(flag: str, default: Any, text: str, **kwargs: Any) -> None:
        p.add_argument(flag, default=default if defaults else argparse.SUPPRESS, help=text, **kwargs)

    def switch(flag: str, text: str) -> None:
        option(flag, False, text, action="store_true")

    option(
        "--backends", None, "comma-separated backends, the first one is the reference unless --reference "
        "(default: every registered backend that runs here as configured or emulated, the CPU first)", metavar="NAMES",
    )  # fmt: skip
    option("--rtol", 0.0, "relative tolerance per step (default 0: bitwise)", type=float)
    option("--atol", 0.0, "absolute tolerance per step (default 0: bitwise)", type=float)
    option(
        "--metric", "loss", "the logged value to compare (default: loss); or a regular expression with named "
        r"groups 'step' and metric names, read from the script's output: 'iter (?P<step>\d+): loss (?P<loss>\S+)' "
        "(the first metric group is compared)", metavar="NAME|REGEX",
    )  # fmt: skip
    switch("--redirect", "run each leg under the runtime redirect (accel run): for unported CUDA scripts")
    switch(
        "--allow-missing",
        "with --redirect: serve memory statistics a backend does not keep as 0 (accel run --allow-missing)",
    )
    option("--record", None, "also write parity.json to FILE, as a reference for later", type=Path, metavar="FILE")
    option(
        "--reference", None, "compare every backend against a run recorded in FILE (a --record file or any "
        "parity.json)", type=Path, metavar="FILE",
    )  # fmt: skip
    option("--reference-run", None, "which run of --reference (default: its reference)", metavar="LABEL")
    switch(
        "--allow-nonfinite",
        "accept NaN/inf where the reference has the same value at the same step (never against a finite one)",
    )
    option(
        "--seeds", 1, "runs per backend; run k>0 replaces every seed the script sets by one derived from "
        "(seed, k), and the verdict is statistical (default 1: bitwise/tolerance)", type=int, metavar="N",
    )  # fmt: skip
    option("--alpha", 0.05, "--seeds: false-alarm rate of one comparison over all its windows (default 0.05)", type=float)
    option("--windows", 10, "--seeds: windows of steps tested (default 10)", type=int, metavar="W")
    option("--jobs", 1, "runs at once (default 1: step times do not compete)", type=int, metavar="J")
    switch(
        "--locate",
        "when a run diverges, re-run its first divergent step with module fingerprints and name the first "
        "module and ATen op that differ; with --record, fingerprint every step of run 0 into the recording",
    )
    option("--out", Path("parity-out"), "output folder (default: parity-out/)", type=Path)
    option("--timeout", None, "limit for each run", type=float, metavar="SECONDS")
    switch("--no-plot", "skip the PNG (no matplotlib needed)")
    switch("--no-progress", "no progress bars")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "parity",
        help="run a training script on several backends and compare its per-step losses",
        description=__doc__.split("\n\n", 1)[1].split("\n\nExit")[0],
        epilog="exit status: 0 match (or equivalent over seeds), 1 diverged, 2 a run failed or nothing "
        "was compared. Example: accel parity examples/train.py --backends cpu,neuron -- --steps 50",
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
    if raw is not None:
        names = [part.strip() for part in raw.split(",") if part.strip()]
        if names:
            return names
        raise ConfigError(
            f"--backends {raw!r} names no backend; give one or more, e.g. --backends cpu,neuron "
            "(leave the option out to run every backend that runs here, emulated or not)"
        )
    from ..emulation import runnable_backends

    names = runnable_backends()  # the emulation rule: an emulated backend is in the default list
    if not names:
        raise ConfigError("accel parity: no backend is available here (accel info says why); pass --backends")
    return names


def _check_numbers(args: argparse.Namespace) -> None:
    for name in ("rtol", "atol"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value >= 0):
            raise ConfigError(f"--{name} must be a finite number >= 0 (got {value})")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise ConfigError(
            f"--timeout must be a number of seconds > 0 (got {args.timeout:g}); leave it out for no limit"
        )
    for name, low in (("seeds", 1), ("windows", 1), ("jobs", 1)):
        if getattr(args, name) < low:
            raise ConfigError(f"--{name} must be a whole number >= {low} (got {getattr(args, name)})")
    if not (0 < args.alpha < 1):
        raise ConfigError(f"--alpha must be between 0 and 1, e.g. 0.05 (got {args.alpha:g})")


def _check_something_compared(args: argparse.Namespace, backends: list[str]) -> None:
    """Fewer than two runs to compare and no --reference: not a pass (exit 2), whatever the default list."""
    if len(backends) >= 2 or args.reference is not None or args.record is not None:
        return
    given = "--backends names" if args.backends is not None else "the default (every backend that runs here, emulated or not) is"
    raise NothingToCompareError(
        f"accel parity: {given} one backend ({backends[0]}), so nothing would be compared"
        + (f" (its {args.seeds} seeds are only its own noise)" if args.seeds > 1 else "")
        + f"; add a second backend (--backends {backends[0]},NAME; accel info lists what this machine can run), "
        "a recording to compare against (--reference FILE), or --record FILE to make one"
    )


def _check_folder(path: Path, option: str) -> None:
    """``path`` is (or can become) a folder: checked before anything runs."""
    if path.exists() and not path.is_dir():
        raise ConfigError(
            f"{option} {path} is a file, not a folder; give a folder (it is created if missing)"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot create the folder ({exc.strerror or exc})") from None


def _check_record(path: Path | None) -> None:
    if path is None:
        return
    if path.is_dir():
        raise ConfigError(f"--record {path} is a folder; give a file name (e.g. {path / 'reference.json'})")
    _check_folder(path.parent, f"--record {path}: its folder")


def run(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from .. import exits
    from .compare import compare_runs
    from .ensemble import compare_ensembles
    from .locating import locate_all
    from .pattern import MetricPattern, looks_like_pattern
    from .reference import file_sha256, load_reference, run_mismatches, settings_mismatches
    from .report import print_report, to_json, write_json
    from .runner import run_backends
    from .seeding import DERIVATION as SEED_DERIVATION
    from .seeding import ENV_VAR as SEED_ENV

    args, script, script_args = _split(args)
    if not Path(script).is_file():
        raise ConfigError(f"accel parity: script {script!r} does not exist (or is not a file)")
    _check_numbers(args)
    pattern = MetricPattern.parse(args.metric) if looks_like_pattern(args.metric) else None
    metric = pattern.compared if pattern is not None else args.metric
    backends = _backends(args.backends)
    out: Path = args.out
    _check_folder(out, "--out")
    _check_record(args.record)
    if args.allow_missing and not args.redirect:
        raise ConfigError(
            "--allow-missing only applies with --redirect (it is an option of the runtime redirect)"
        )
    if args.reference_run is not None and args.reference is None:
        raise ConfigError("--reference-run needs --reference FILE")
    _check_something_compared(args, backends)
    reference = load_reference(args.reference, args.reference_run) if args.reference is not None else None
    context = {
        "script_sha256": file_sha256(script),
        "redirect": bool(args.redirect),
        "metric_pattern": pattern.regex.pattern if pattern is not None else None,
    }
    now = {**context, "script_args": script_args, "metric": metric}

    console = exits.console()
    if not console.is_terminal:
        console = exits.console(width=max(console.width, 130))  # a log file or CI: keep the table readable
    mode = " (redirected)" if args.redirect else ""
    command = " ".join([script, *script_args])
    console.print(
        f"accel parity: {escape(command)} on {', '.join(backends)}{mode} -> {out}/", highlight=False
    )
    before: list[str] = []
    if reference is not None:
        console.print(
            f"reference: {escape(reference.run.label)} = {escape(reference.summary)}", highlight=False
        )
        before = settings_mismatches(reference, now)
        for line in before:
            console.print(f"[yellow]settings differ from the reference: {escape(line)}", highlight=False)
    with exits.terminate_on_sigterm():  # SIGTERM ends the runs' process groups too
        runs = run_backends(
            script,
            script_args,
            backends,
            out,
            progress=not args.no_progress,
            timeout=args.timeout,
            metric=metric,
            pattern=pattern,
            redirect=args.redirect,
            allow_missing=args.allow_missing,
            seeds=args.seeds,
            jobs=args.jobs,
            fingerprint_steps="all" if args.locate and args.record is not None else None,
        )
    if reference is not None:
        runs = [*reference.runs, *runs]
        after = run_mismatches(reference, runs)
        for line in after:
            console.print(f"[yellow]settings differ from the reference: {escape(line)}", highlight=False)
        context = {
            **context,
            "reference_file": {
                "path": str(reference.path),
                "run": reference.run.label,
                "sha256": reference.sha256,
            },
            "settings_mismatches": before + after,
        }
    if args.seeds > 1 or (reference is not None and len(reference.runs) > 1):
        result = compare_ensembles(
            runs, metric=metric, rtol=args.rtol, atol=args.atol, alpha=args.alpha, n_windows=args.windows
        )
    else:
        result = compare_runs(
            runs, metric=metric, rtol=args.rtol, atol=args.atol, allow_nonfinite=args.allow_nonfinite
        )
    print_report(result, runs, console)
    context = {**context, "seeds": {"count": args.seeds, "derivation": SEED_DERIVATION, "env": SEED_ENV}}
    if args.locate and not result.passed and not result.failed_runs:
        located = locate_all(
            result, runs, script, script_args, out, metric=metric, rtol=args.rtol, atol=args.atol,
            progress=not args.no_progress, timeout=args.timeout, pattern=pattern, allow_missing=args.allow_missing,
        )  # fmt: skip
        for entry in located:
            console.print(f"[bold]located {escape(entry['label'])}[/bold]: {escape(entry['note'])}", highlight=False)
        context["locate"] = located
    document = to_json(result, runs, script, script_args, context)
    written = [str(write_json(document, out / "parity.json"))]
    if args.record is not None:
        written.append(str(write_json(document, args.record)))
    if not args.no_plot:
        from .plot import plot_runs

        try:
            written.append(str(plot_runs(runs, out / "parity.png", metric)))
        except AccelError as exc:
            console.print(f"[yellow]accel parity: {escape(str(exc))}")
    console.print("wrote " + ", ".join(written), highlight=False)
    for c in result.failed_runs:
        log = next(r.log_path for r in runs if r.label == c.label)
        console.print(f"[red]{escape(c.label)}: {escape(c.error)}[/red] (log: {log})", highlight=False)
    if result.failed_runs or any(c.error for c in result.comparisons):
        return EXIT_FAILED
    return EXIT_MATCH if result.passed else EXIT_DIVERGED
