"""The ``accel`` command: the subcommands that plugins register (the built-in ones included).

Subcommands come from the ``accel_register_commands`` hook (:mod:`accel_abstraction.commands`);
only the module of the command being run is imported. An :class:`~accel_abstraction.errors.AccelError` is
printed as one line (``accel: error: ...``) with exit code 2; ``--traceback`` shows it all.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from .commands import CommandSpec, collect_commands
from .errors import PLUGIN_ATTR, AccelError
from .plugins import get_host

__all__ = ["available_commands", "build_parser", "main", "owns_process", "print_error", "run"]


def available_commands() -> dict[str, CommandSpec]:
    """Name -> spec of every subcommand: the built-in ones and those plugins register."""
    return collect_commands(get_host())


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``accel`` parser; the full sub-parser only for ``command`` (all of them when None)."""
    commands = available_commands()
    parser = argparse.ArgumentParser(
        prog="accel", description="Hardware-agnostic accelerator layer for PyTorch."
    )
    parser.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    wanted = {spec.module for spec in commands.values() if command is None or spec.name == command}
    for module in dict.fromkeys(spec.module for spec in commands.values()):
        if module in wanted:
            importlib.import_module(module).add_parser(subparsers)
    for spec in commands.values():
        if spec.name not in subparsers.choices:
            subparsers.add_parser(spec.name, help=spec.help)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg
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
    try:
        parser = build_parser(_command_of(argv) or "")
    except AccelError as exc:  # a command module that cannot load here (e.g. torch not installed)
        return print_error(exc, "--traceback" in argv)
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


#: True while ``accel`` runs as a process of its own (:func:`run`: the console script,
#: ``python -m accel_abstraction``), not when a program or a test calls :func:`main`. Only
#: then may a command change process-wide state such as the garbage collector.
_own_process = False


def owns_process() -> bool:
    """Whether the running command is the whole process (see :func:`run`)."""
    return _own_process


def run() -> NoReturn:
    """The ``accel`` console script: :func:`main` in a process of its own, exiting with its code."""
    global _own_process
    _own_process = True
    sys.exit(main())


if __name__ == "__main__":
    run()
