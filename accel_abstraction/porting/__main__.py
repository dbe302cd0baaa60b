"""``python -m accel_abstraction.porting scan|port ...``: the porting subcommands on their own."""

from __future__ import annotations

import sys

from ..cli import Parser
from ..exits import run_command
from .cli import add_parser


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m accel_abstraction.porting")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_parser(subparsers)
    args = parser.parse_args(argv)
    return run_command(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
