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

from .errors import PLUGIN_ATTR, AccelError

__all__ = ["build_parser", "main", "print_error"]

#: Subcommand -> (module that contributes it, one-line help). Only the module of the command
#: being run is imported, so `accel scan` never pays for torch and `accel info` not for libcst.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "info": ("accel_abstraction.info", "show plugins, backends, the selected backend and why"),
    "scan": ("accel_abstraction.porting.cli", "find CUDA coupling in Python code (reads it; never runs it)"),
    "port": ("accel_abstraction.porting.cli", "rewrite CUDA coupling to the accel_abstraction API"),
    "run": ("accel_abstraction.redirect.cli", "run CUDA code unchanged on the selected backend"),
    "parity": ("accel_abstraction.parity.cli", "run a training script on several backends and compare"),
    "patches": ("accel_abstraction.patching.cli", "list, check, apply or revert the PyTorch patch series"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``accel`` parser; the full sub-parser only for ``command`` (all of them when None)."""
    parser = argparse.ArgumentParser(
        prog="accel", description="Hardware-agnostic accelerator layer for PyTorch."
    )
    parser.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    wanted = {module for name, (module, _) in SUBCOMMANDS.items() if command is None or name == command}
    for module in dict.fromkeys(m for m, _ in SUBCOMMANDS.values()):
        if module in wanted:
            importlib.import_module(module).add_parser(subparsers)
    for name, (_, help_text) in SUBCOMMANDS.items():
        if name not in subparsers.choices:
            subparsers.add_parser(name, help=help_text)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in SUBCOMMANDS else None
    return None


def print_error(exc: AccelError, show_traceback: bool = False) -> int:
    """Print ``exc`` as one ``accel: error: ...`` line (the traceback too if asked); return exit code 2."""
    if show_traceback:
        traceback.print_exception(exc)
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    print(f"accel: error: {first}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(argv) or "")
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except AccelError as exc:
        return print_error(exc, args.traceback)
    except Exception as exc:
        plugin = getattr(exc, PLUGIN_ATTR, None)
        if plugin is None:
            raise
        if args.traceback:
            traceback.print_exception(exc)
        first = (str(exc).splitlines() or [""])[0]
        print(f"accel: error: plugin {plugin!r} raised {type(exc).__name__}: {first}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
