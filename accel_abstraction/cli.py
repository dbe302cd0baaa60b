"""The ``accel`` command: the subcommands that plugins register (the built-in ones included).

Subcommands come from the ``accel_register_commands`` hook (:mod:`accel_abstraction.commands`);
only the module of the command being run is imported. Every command ends as
:mod:`accel_abstraction.exits` says: an error is one ``accel: error: ...`` line with exit
code 2 (``--traceback`` shows it all), a closed pipe ends quietly with 141.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from ._lazy import torch_first
from .commands import CommandSpec, collect_commands
from .exits import print_error, run_command
from .plugins import get_host

__all__ = ["Parser", "available_commands", "build_parser", "main", "owns_process", "print_error", "run"]


def available_commands() -> dict[str, CommandSpec]:
    """Name -> spec of every subcommand: the built-in ones and those plugins register."""
    return collect_commands(get_host())


_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


class Parser(argparse.ArgumentParser):
    """The parser of every ``accel`` command (sub-parsers inherit it): help texts come from
    docstrings written in reST, and ``--help`` shows their ````literals```` as plain text."""

    def format_help(self) -> str:
        return _LITERAL.sub(r"\1", super().format_help())


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``accel`` parser; the full sub-parser only for ``command`` (all of them when None)."""
    commands = available_commands()
    parser = Parser(prog="accel", description="Hardware-agnostic accelerator layer for PyTorch.")
    parser.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    parser.add_argument("--version", action="version", version=f"accel {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    wanted = {spec.module for spec in commands.values() if command is None or spec.name == command}
    if any(spec.imports_torch and spec.module in wanted for spec in commands.values()):
        torch_first()
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


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("accel-abstraction")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


def _dispatch(argv: list[str]) -> int:
    parser = build_parser(_command_of(argv) or "")
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (the table in :mod:`accel_abstraction.exits`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_command(lambda: _dispatch(argv), show_traceback="--traceback" in argv[: _command_index(argv)])


def _command_index(argv: Sequence[str]) -> int:
    """Where the subcommand's own arguments start (the top-level options come before it)."""
    for i, arg in enumerate(argv):
        if not arg.startswith("-"):
            return i
    return len(argv)


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
