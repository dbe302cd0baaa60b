"""Per-call, autocast, import and first-use cost of the public API against the direct torch call.

Run: ``python benchmarks/bench_core.py [--backend cpu] [--json benchmarks/results.json]``.
Targets (read off the table, not asserted): per call <= 1.10x, ``accel.autocast()`` enter/exit
<= 1.02x, ``import accel_abstraction`` on top of torch <= 1.01x, first use
(``import torch, accel_abstraction; accel.device()``), with nothing configured and with
``ACCEL_BACKEND`` set, and ``accel info --help`` <= 1.03x of ``import torch``. ``accel info`` is shown too: its rich tables cost ~20 ms of imports.
Method: :mod:`harness` (interleaved shuffled rounds, thread CPU time, median and range).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import harness  # noqa: E402


def call_cases(backend: str) -> list[harness.Case]:
    import torch

    import accel_abstraction as accel

    accel.use(backend)
    dev_type = accel.device_type()
    amp_dtype = accel.backend().default_amp_dtype

    def direct(expr: str):  # the literal code a user writes today, e.g. torch.cpu.synchronize()
        return eval(f"lambda: {expr}", {"torch": torch})  # noqa: S307 - fixed strings

    def ours(expr: str):  # the same call through the public API: accel.synchronize()
        return eval(f"lambda: {expr}", {"accel": accel})  # noqa: S307 - fixed strings

    def ours_autocast() -> None:
        with accel.autocast():
            pass

    def direct_autocast() -> None:
        with torch.autocast(dev_type, dtype=amp_dtype):
            pass

    return [
        harness.Case("synchronize()", ours("accel.synchronize()"), direct(f"torch.{dev_type}.synchronize()")),
        harness.Case("device()", ours("accel.device()"), direct(f"torch.device({dev_type!r})")),
        harness.Case("device_count()", ours("accel.device_count()"), direct(f"torch.{dev_type}.device_count()")),
        harness.Case("manual_seed(0)", ours("accel.manual_seed(0)"), direct("torch.manual_seed(0)")),
        harness.Case("autocast() enter/exit", ours_autocast, direct_autocast),
    ]


def process_cases(rounds: int, backend: str, configured: str) -> list[harness.Result]:
    """``backend``: the ACCEL_BACKEND of every case ("auto": none set); ``configured``: the
    backend the configured first use names in ACCEL_BACKEND, the one-line configuration."""
    env = {"ACCEL_BACKEND": backend} if backend != "auto" else {}
    cases = [
        ("import accel_abstraction (on torch)", "import accel_abstraction", env),
        ("first use: accel.device()", harness.ACCEL_FIRST_USE, env),
        (f"first use, ACCEL_BACKEND={configured}", harness.ACCEL_FIRST_USE, {"ACCEL_BACKEND": configured}),
        ("accel info --help", _cli(["info", "--help"]), env),
        ("accel info", _cli(["info"]), env),
    ]
    return [
        harness.compare_processes(name, "import torch", code, rounds, env=case_env, packages=harness.ACCEL_PACKAGES)
        for name, code, case_env in cases
    ]


def _cli(argv: list[str]) -> str:
    """Code running ``accel <argv>`` as the console script does (:func:`accel_abstraction.cli.run`),
    in-process, with its output discarded and its exit caught."""
    return (
        "import contextlib, io, sys\n"
        "from accel_abstraction.cli import run\n"
        f"sys.argv = ['accel', *{argv!r}]\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    run()\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--process-rounds", type=int, default=5, help="fresh interpreters for each import cost")
    harness.add_common_args(parser)
    args = parser.parse_args()
    harness.setup_threads(args.threads)
    results = harness.compare_calls(call_cases(args.backend), args.rounds, args.budget, args.seed)
    first_use_env = "auto" if args.backend == "cpu" else args.backend  # cpu is what auto picks here
    results += process_cases(args.process_rounds, first_use_env, args.backend)
    harness.print_results(f"accel-abstraction core on {args.backend!r}", results, args.threads)
    if args.json:
        harness.write_json(args.json, "core", results, args.threads, {"backend": args.backend})


if __name__ == "__main__":
    main()
