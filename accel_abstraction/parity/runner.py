"""Run one training script once per backend, each in its own process, and collect its metrics.

Each run gets the caller's environment with two changes: ``ACCEL_BACKEND=<name>`` (the one
configuration line) and ``ACCEL_METRICS_FILE`` (where ``accel.log_metric`` writes). A backend
that cannot run here as configured but offers an emulation runs emulated, by the rule of
:mod:`accel_abstraction.emulation`; the variables changed for each run are recorded.

Two options for scripts that were not written for accel-abstraction: ``redirect`` runs each
leg under the runtime redirect (``accel run``, through :mod:`.leg`), and a
:class:`~.pattern.MetricPattern` reads the metrics from the script's output instead of the
metrics file (then ``PYTHONUNBUFFERED=1`` too, so the output can be followed as it comes).

With ``seeds=N`` each backend runs N times, run ``k`` with ``ACCEL_PARITY_SEED_INDEX=k``
(:mod:`.seeding`; run 0 is the plain run); with ``fingerprint_steps`` each run records the
fingerprints of those steps (:mod:`.fingerprint`). Both go through :mod:`.launch`. ``jobs``
runs that many legs side by side (step times then compete for the CPU).

While the runs go on, a progress bar per run follows the metrics as they come.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .._labels import unique_labels
from ..emulation import backend_env, emulation_var
from ..environment import read
from ..metrics import ENV_VAR as METRICS_ENV
from . import fingerprint as fp
from .metrics_lines import Follower, take_json_lines, take_output_lines
from .pattern import MetricPattern
from .runs import BackendRun, run_label
from .seeding import ENV_VAR as SEED_ENV

__all__ = ["BackendRun", "backend_env", "emulation_var", "plan_runs", "run_backends", "run_planned"]

POLL_SECONDS = 0.1
#: Variables that describe one run of a parity check: set per run, never inherited from the caller.
_RUN_VARS = frozenset({SEED_ENV, fp.FILE_ENV, fp.STEPS_ENV, fp.STOP_ENV, fp.BOUNDARY_ENV})


def _kill_group(proc: subprocess.Popen[Any], leftovers_only: bool = False) -> None:
    """Kill the run's whole process group (the script and its DataLoader workers, children...).

    Each run starts in a session of its own, so a terminal's Ctrl-C reaches only
    ``accel parity``, which then ends the runs itself. ``leftovers_only``: the script has
    exited; kill what it left running in its group.
    """
    if not leftovers_only and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def plan_runs(
    backends: Sequence[str],
    out_dir: Path,
    *,
    seeds: int = 1,
    redirect: bool = False,
    pattern: MetricPattern | None = None,
    fingerprint_steps: str | None = None,
    suffix: str = "",
) -> list[BackendRun]:
    """The runs to make: each backend ``seeds`` times (backend by backend), files named in ``out_dir``.

    ``fingerprint_steps``: ``"all"`` or step positions (``"4,5"``) to fingerprint (``--locate``);
    ``suffix`` tells the files of a re-run from the first ones.
    """
    runs = []
    for group, name in zip(unique_labels(backends), backends, strict=True):
        env, why_not = backend_env(name)
        for k in range(seeds):
            label = run_label(group, k)
            safe = label.replace("#", "-").replace("/", "-") + suffix
            run = BackendRun(
                label,
                name,
                group=group,
                seed_index=k,
                metrics_path=str(out_dir / f"metrics-{safe}.jsonl"),
                log_path=str(out_dir / f"{safe}.log"),
                redirect_report=str(out_dir / f"redirect-{safe}.json") if redirect else "",
            )
            run.env = dict(env)
            if k:
                run.env[SEED_ENV] = str(k)
            if fingerprint_steps is not None and k == 0:  # run 0 is the one --locate compares
                run.fingerprints_path = str(out_dir / f"fingerprints-{safe}.jsonl")
                run.env[fp.STEPS_ENV] = fingerprint_steps
                if pattern is not None:
                    run.env[fp.BOUNDARY_ENV] = "optimizer"
            if pattern is not None:
                run.env["PYTHONUNBUFFERED"] = "1"  # the output is the metrics source: follow it as it comes
            if why_not:
                run.error = why_not  # emulation.unavailable_message: the reason and the plugin's hint
            runs.append(run)
    return runs


def run_backends(
    script: str | Path,
    script_args: Sequence[str],
    backends: Sequence[str],
    out_dir: Path,
    *,
    progress: bool = True,
    timeout: float | None = None,
    metric: str = "loss",
    pattern: MetricPattern | None = None,
    redirect: bool = False,
    allow_missing: bool = False,
    seeds: int = 1,
    jobs: int = 1,
    fingerprint_steps: str | None = None,
) -> list[BackendRun]:
    """Run ``script`` ``seeds`` times per backend; return the runs (backend by backend, seed by seed).

    ``pattern``: read the metrics from the script's output (``metric`` is then its compared
    group); ``redirect``: run each leg under the runtime redirect (``accel run``, with
    ``--allow-missing`` if ``allow_missing``); ``jobs``: how many runs at once (default 1,
    so timings do not compete).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = plan_runs(
        backends, out_dir, seeds=seeds, redirect=redirect, pattern=pattern, fingerprint_steps=fingerprint_steps
    )
    run_planned(
        runs, script, script_args, progress=progress, timeout=timeout, metric=metric, pattern=pattern,
        allow_missing=allow_missing, jobs=jobs,
    )  # fmt: skip
    return runs


def run_planned(
    runs: Sequence[BackendRun],
    script: str | Path,
    script_args: Sequence[str],
    *,
    progress: bool = True,
    timeout: float | None = None,
    metric: str = "loss",
    pattern: MetricPattern | None = None,
    allow_missing: bool = False,
    jobs: int = 1,
    extra_env: Mapping[str, str] | None = None,
) -> None:
    """Make the runs of :func:`plan_runs` (``jobs`` at a time), filling in their results."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    script = Path(script)
    console = Console(stderr=True)
    width = max([10, *(len(run.label) for run in runs)])
    columns = (
        TextColumn(f"[bold]{{task.description:<{width}}}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
    )
    stop = threading.Event()
    with Progress(*columns, console=console, disable=not progress, transient=False) as bar:
        tasks = {run.label: bar.add_task(run.label, total=None, status="waiting") for run in runs}
        expected: list[int] = []

        def one(run: BackendRun) -> None:
            task = tasks[run.label]
            if run.error:
                bar.update(task, status=f"[red]{escape(run.error)}")
                return
            bar.update(task, total=expected[0] if expected else None, status="starting")
            _run_one(run, script, script_args, bar, task, timeout, metric, pattern, allow_missing, stop, extra_env)
            if run.ok and not expected:
                expected.append(len(run.records))  # later runs of the same script: a known total

        if jobs <= 1:
            for run in runs:
                one(run)
            return
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="accel-parity") as pool:
            futures = [pool.submit(one, run) for run in runs]
            try:
                for future in futures:
                    future.result()
            except BaseException:
                stop.set()  # the other legs end their process groups and return
                raise


def _run_one(
    run: BackendRun,
    script: Path,
    script_args: Sequence[str],
    bar: Any,
    task: Any,
    timeout: float | None,
    metric: str,
    pattern: MetricPattern | None,
    allow_missing: bool = False,
    stop: threading.Event | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> None:
    metrics = Path(run.metrics_path)
    try:
        metrics.unlink(missing_ok=True)  # log_metric appends
    except OSError as exc:  # a folder left there: not ours to delete
        run.error = f"cannot remove the previous metrics file {metrics} ({exc.strerror or exc}); remove it, then run again"
        return
    inherited = {k: v for k, v in os.environ.items() if k not in _RUN_VARS}  # a parity run's own, never a parent's
    env = {**inherited, **run.env, **(extra_env or {}), METRICS_ENV: str(metrics)}
    if run.fingerprints_path:
        Path(run.fingerprints_path).unlink(missing_ok=True)
        env[fp.FILE_ENV] = run.fingerprints_path
    follower = Follower(metrics)
    output = Follower(Path(run.log_path))
    if run.redirect_report:
        Path(run.redirect_report).unlink(missing_ok=True)
        leg = [sys.executable, "-m", "accel_abstraction.parity.leg", run.redirect_report]
        command = [*leg, *(["--allow-missing"] if allow_missing else []), str(script)]
    elif read(SEED_ENV, env) is not None or run.fingerprints_path:  # seeds to derive or fingerprints to take
        command = [sys.executable, "-m", "accel_abstraction.parity.launch", str(script)]
    else:
        command = [sys.executable, str(script)]
    start = time.perf_counter()
    with open(run.log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            [*command, *script_args], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            while True:
                try:
                    proc.wait(timeout=POLL_SECONDS)
                    done = True
                except subprocess.TimeoutExpired:
                    done = False
                new = take_json_lines(run, follower.lines(final=done), keep_steps=pattern is None)
                if pattern is not None:
                    new = take_output_lines(run, output.lines(final=done), pattern)
                if new:
                    run.records.extend(new)
                    last = new[-1]
                    value = last.get(metric)
                    status = f"{metric} {value:.4f}" if isinstance(value, (int, float)) else ""
                    bar.update(task, completed=len(run.records), status=status)
                if done:
                    break
                if timeout is not None and time.perf_counter() - start > timeout:
                    _kill_group(proc)
                    run.error = f"timed out after {timeout:g} s"
                    break
                if stop is not None and stop.is_set():
                    _kill_group(proc)
                    run.error = "stopped (another run was interrupted)"
                    break
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            _kill_group(proc, leftovers_only=True)
    run.wall_time = time.perf_counter() - start
    run.returncode = proc.returncode
    if not run.error and follower.problem:
        run.error = follower.problem
    if run.fingerprints_path:
        from .locate import read_entries

        run.fingerprints = read_entries(run.fingerprints_path)
    if not run.error and proc.returncode != 0:
        run.error = f"exited with code {proc.returncode}: {_tail(Path(run.log_path), 1)}"
    elif not run.error and not run.records and pattern is not None:
        last_line = _tail(Path(run.log_path), 1) or "(no output)"
        run.error = f"no line of its output matched --metric {pattern.regex.pattern!r} (last line: {last_line!r})"
    elif not run.error and not run.records:
        run.error = f"logged no metrics (does the script call accel.log_metric? {METRICS_ENV} was {metrics})"
    if run.error:
        from rich.markup import escape

        bar.update(task, status=f"[red]{escape(run.error)}")
    else:
        bar.update(
            task, total=len(run.records), completed=len(run.records), status=f"done in {run.wall_time:.1f} s"
        )
