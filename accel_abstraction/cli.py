"""The ``accel`` command: ``accel info`` and the subcommands tool modules add.

Each tool module exposes ``add_parser(subparsers)``, which adds its subcommand and sets
``func`` (``args -> exit code``). An :class:`~accel_abstraction.errors.AccelError` is
printed as one line (``accel: error: ...``) with exit code 2; ``--traceback`` shows it all.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence

from .errors import AccelError

__all__ = ["build_parser", "main"]

#: Modules contributing subcommands, in help order.
SUBCOMMAND_MODULES = (
    "accel_abstraction.info",
    "accel_abstraction.porting.cli",
    "accel_abstraction.redirect.cli",
    "accel_abstraction.parity.cli",
    "accel_abstraction.patching.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="accel", description="Hardware-agnostic accelerator layer for PyTorch."
    )
    parser.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except AccelError as exc:
        if args.traceback:
            traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"accel: error: {first}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
