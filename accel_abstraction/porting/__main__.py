"""``python -m accel_abstraction.porting scan|port ...``: the porting subcommands on their own."""

from __future__ import annotations

import argparse
import sys

from ..errors import AccelError
from .cli import add_parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accel_abstraction.porting")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_parser(subparsers)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except AccelError as exc:
        print(f"accel: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
