"""Run a script or module with a torch overlay active.

::

    python -m accel_abstraction.patching.run [--overlay DIR] script.py [args...]
    python -m accel_abstraction.patching.run [--overlay DIR] -m package.module [args...]

The overlay (default ``$ACCEL_TORCH_OVERLAY``, else ``./.accel-overlay/torch-<version>``)
is activated before the script runs, so before it imports torch. The script sees
``sys.argv`` as if it had been started directly.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import sys
from collections.abc import Sequence

from .errors import PatchError
from .overlay import activate

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, activate the overlay and run the target; return an exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m accel_abstraction.patching.run",
        description="Run a Python script or module with the patched-torch overlay active.",
    )
    parser.add_argument("--overlay", metavar="DIR", help="overlay directory (default: see module docs)")
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like python -m")
    parser.add_argument("target", nargs=argparse.REMAINDER, help="script path and its arguments")
    args = parser.parse_args(argv)
    if args.module is None and not args.target:
        parser.error("give a script path or -m MODULE")
    try:
        if args.module is None:
            _check_target(None, args.target)  # a missing script is said before the overlay is looked at
        activate(args.overlay)
        if args.module is not None:
            _check_target(args.module, args.target)
    except PatchError as exc:
        print(f"accel-overlay: error: {exc}", file=sys.stderr)
        return 2
    if args.module is not None:
        sys.argv = [args.module, *args.target]
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(args.target)
        sys.path.insert(0, os.path.dirname(os.path.abspath(args.target[0])))
        runpy.run_path(args.target[0], run_name="__main__")
    return 0


def _check_target(module: str | None, target: Sequence[str]) -> None:
    """:class:`PatchError` unless the script (a file, or a folder with ``__main__.py``) or module exists."""
    if module is not None:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise PatchError(f"no module named {module!r} (searched sys.path with the overlay active); check the name")
        return
    script = target[0]
    if os.path.isdir(script) and os.path.isfile(os.path.join(script, "__main__.py")):
        return
    if not os.path.isfile(script):
        what = "is a folder without __main__.py" if os.path.isdir(script) else "does not exist"
        raise PatchError(f"script {script!r} {what}; give the path of a Python script, or -m MODULE")


if __name__ == "__main__":
    sys.exit(main())
