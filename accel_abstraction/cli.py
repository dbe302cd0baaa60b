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
from .commands import BUILTIN_COMMANDS, CommandSpec, collect_commands
from .errors import PluginError
from .exits import print_error, run_command
from .plugins import get_host

__all__ = ["Parser", "available_commands", "build_parser", "main", "owns_process", "print_error", "run"]


def available_commands(command: str | None = None) -> dict[str, CommandSpec]:
    """Name -> spec of every subcommand: the built-in ones and those plugins register.

    For a built-in ``command`` that needs no backend, only plugins' tools modules are imported.
    """
    tools_only = any(spec.name == command and not spec.needs_backends for spec in BUILTIN_COMMANDS)
    return collect_commands(get_host("tools" if tools_only else "all"))


_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


class Parser(argparse.ArgumentParser):
    """The parser of every ``accel`` command (sub-parsers inherit it): help texts come from
    docstrings written in reST, and ``--help`` shows their ````literals```` as plain text."""

    def format_help(self) -> str:
        return _LITERAL.sub(r"\1", super().format_help())


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``accel`` parser; the full sub-parser only for ``command`` (all of them when None)."""
    commands = available_commands(command)
    parser = Parser(prog="accel", description="Hardware-agnostic accelerator layer for PyTorch.")
    parser.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    parser.add_argument("--version", action="version", version=f"accel {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    wanted = {spec.module for spec in commands.values() if command is None or spec.name == command}
    if any(spec.imports_torch and spec.module in wanted for spec in commands.values()):
        torch_first()
    broken: dict[str, str] = {}
    for module in dict.fromkeys(spec.module for spec in commands.values()):
        if module in wanted:
            problem = _add_parsers(module, subparsers)
            if problem:
                broken[module] = problem
    for spec in commands.values():
        if spec.module in broken:
            _add_broken(subparsers, spec, broken[spec.module])
        elif spec.name not in subparsers.choices:
            subparsers.add_parser(spec.name, help=spec.help)
    return parser


def _add_parsers(module: str, subparsers: argparse._SubParsersAction) -> str:  # type: ignore[type-arg]
    """Import a command module and let it add its parsers; ``""``, or why it could not
    (the plugin's bug: its commands are listed as broken, the others stay usable)."""
    before = set(subparsers.choices)
    try:
        importlib.import_module(module).add_parser(subparsers)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - one broken command module must not take the CLI down
        for name in set(subparsers.choices) - before:  # half-added parsers of the broken module
            _drop(subparsers, name)
        return f"{type(exc).__name__}: {exc}"
    return ""


def _drop(subparsers: argparse._SubParsersAction, name: str) -> None:  # type: ignore[type-arg]
    subparsers.choices.pop(name, None)
    subparsers._choices_actions = [a for a in subparsers._choices_actions if a.dest != name]


def _add_broken(subparsers: argparse._SubParsersAction, spec: CommandSpec, problem: str) -> None:  # type: ignore[type-arg]
    """A parser for ``spec`` that says it is broken, in ``--help`` and when run."""
    message = f"command {spec.name!r} is broken: its module {spec.module!r} could not be loaded ({problem})"

    def fail(_args: argparse.Namespace) -> int:
        raise PluginError(f"{message}; reinstall or uninstall the plugin that provides it (accel info lists plugins)")

    _drop(subparsers, spec.name)
    sub = subparsers.add_parser(spec.name, help=f"(broken) {spec.help}", add_help=False, prefix_chars="\0")
    sub.add_argument("rest", nargs=argparse.REMAINDER)
    sub.set_defaults(func=fail)


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
