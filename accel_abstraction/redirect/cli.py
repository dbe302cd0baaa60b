"""``accel run``: run unported CUDA code on the selected backend and report what to port.

::

    ACCEL_BACKEND=cpu accel run train.py --epochs 1
    accel run --report json -o report.json train.py
    accel run --allow-missing -m mypackage.train
    ACCEL_BACKEND=neuron accel run --ops train.py   # + the ATen ops run on the device, documented fallbacks marked
    python -m accel_abstraction.run train.py      # the same, without the console script
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

__all__ = ["add_parser", "build_parser", "main"]

_DESCRIPTION = (
    "Run a PyTorch script written for CUDA, unchanged, on the selected backend (ACCEL_BACKEND): "
    "torch.cuda.*, .cuda(), device='cuda', autocast/GradScaler('cuda'), nccl, cuDNN flags are "
    "redirected while it runs, and every redirected call site is reported at exit."
)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", dest="module", action="store_true", help="run TARGET as a module (like python -m)")
    parser.add_argument(
        "--report", choices=("table", "json", "none"), default="table",
        help="report at exit: a table on stderr (default), JSON (to stdout unless -o), or nothing",
    )  # fmt: skip
    parser.add_argument("-o", "--output", metavar="PATH", help="write the JSON report to PATH ('-': stdout)")
    parser.add_argument(
        "--allow-missing", action="store_true",
        help="serve memory statistics the backend does not keep as 0 / {} (reported as 'missing') instead of failing",
    )  # fmt: skip
    parser.add_argument(
        "--ops", action="store_true",
        help="also report the ATen operators run on the device, marking those the backend's vendor documents as "
             "CPU fallback or unsupported (costs a Python call per operator)",
    )  # fmt: skip
    parser.add_argument("target", metavar="TARGET", help="the script (or module with -m) to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def _run(args: argparse.Namespace) -> int:
    from .runner import RunOptions, run

    opts = RunOptions(args.target, list(args.args), args.module, args.report, args.output, args.allow_missing)
    opts.traceback = bool(getattr(args, "traceback", False))
    opts.ops = bool(args.ops)
    return run(opts)


def add_parser(subparsers: Any) -> None:
    """Add ``accel run`` to the ``accel`` command."""
    parser = subparsers.add_parser("run", help="run CUDA code unchanged on the selected backend", description=_DESCRIPTION)
    _configure(parser)
    parser.set_defaults(func=_run)


def build_parser() -> argparse.ArgumentParser:
    from ..cli import Parser

    parser = Parser(prog="python -m accel_abstraction.run", description=_DESCRIPTION)
    parser.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    _configure(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m accel_abstraction.run``: same options and errors as ``accel run``."""
    from ..exits import run_command

    args = build_parser().parse_args(argv)
    return run_command(lambda: _run(args), args.traceback)
