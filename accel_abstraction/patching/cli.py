"""``accel patches list | check | apply | revert | rebase | run``: the torch patch series from the command line.

* ``list``: the patches for the installed torch, with the files each changes.
* ``check``: the installed torch has a series, and every patch applies (dry run).
* ``apply``: write the overlay (patched copies of the touched modules) to ``--target``
  (default ``./.accel-overlay/torch-<version>``); ``--in-place`` patches the installed
  torch instead, keeping the originals in ``--target``.
* ``revert``: delete the overlay, or restore the originals of an in-place install.
* ``rebase --from VERSION``: make the series for the installed torch from another release's
  series (:mod:`.rebase`; the procedure is in ``patches/README.md``).
* ``run SCRIPT [ARGS]`` / ``run -m MODULE``: run a script with the overlay active (:mod:`.run`,
  in a fresh interpreter, so before the script imports torch); exit with the script's status.

The series used is the one for the installed release (``patches/pytorch/<release>/``);
``list`` and ``check`` name it.

``--torch-root DIR`` points at another directory holding a ``torch`` package (default:
the one Python would import); ``--patches-dir`` at another ``patches`` directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ConfigError
from .apply import AlreadyAppliedError, apply_in_place, default_target, revert, write_overlay
from .check import check_series
from .series import Series, default_patches_dir, installed_torch_root, load_series, torch_version_at

__all__ = ["add_parser", "main"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``patches`` subcommand to the ``accel`` CLI."""
    parser = subparsers.add_parser(
        "patches",
        help="list, check, apply or revert the patches that remove CUDA hard-coding from torch",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    _configure(parser)


def _configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="patches_command", metavar="ACTION")
    actions.required = True
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--torch-root", type=Path, metavar="DIR", help="directory containing the torch package"
    )
    common.add_argument("--patches-dir", type=Path, metavar="DIR", help="the 'patches' directory to read")
    target = argparse.ArgumentParser(add_help=False)
    target.add_argument(
        "--target",
        type=Path,
        metavar="DIR",
        help="overlay / state directory (default ./.accel-overlay/torch-VERSION)",
    )
    actions.add_parser(
        "list", parents=[common], help="list the patches for the installed torch"
    ).set_defaults(func=_list)
    actions.add_parser(
        "check", parents=[common], help="check that every patch applies (dry run)"
    ).set_defaults(func=_check)
    apply = actions.add_parser(
        "apply", parents=[common, target], help="write the patched overlay",
        description="Write the patched modules of the installed torch to an overlay directory (default "
        "./.accel-overlay/torch-VERSION), each file whole or not at all; `accel patches run SCRIPT` then runs "
        "a script with it active. --in-place patches the installed torch instead (originals backed up).",
    )  # fmt: skip
    apply.add_argument(
        "--in-place",
        action="store_true",
        help="patch the installed torch itself (originals backed up in --target)",
    )
    apply.set_defaults(func=_apply)
    actions.add_parser(
        "revert", parents=[common, target], help="remove the overlay or restore the originals"
    ).set_defaults(func=_revert)
    rebase = actions.add_parser(
        "rebase", parents=[common], help="make the installed torch's series from another release's series"
    )
    rebase.add_argument("--from", dest="source", required=True, metavar="VERSION", help="the series to rebase")
    rebase.add_argument("--replace", action="store_true", help="replace an existing series for the installed torch")
    rebase.set_defaults(func=_rebase)
    run = actions.add_parser(
        "run", help="run a script (or -m MODULE) with the patched overlay active",
        description="Run a Python script or module with the overlay written by `accel patches apply` active "
        "before it imports torch; the script sees its own sys.argv and its exit status is this command's.",
    )  # fmt: skip
    run.add_argument(
        "--target", "--overlay", dest="target", type=Path, metavar="DIR",
        help="the overlay directory (default $ACCEL_TORCH_OVERLAY, else ./.accel-overlay/torch-VERSION)",
    )  # fmt: skip
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like python -m")
    run.add_argument("script", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS]", help="the script and its arguments")
    run.set_defaults(func=_run)


def _load(args: argparse.Namespace) -> tuple[Path, Series]:
    root = args.torch_root or installed_torch_root()
    return root, load_series(torch_version_at(root), args.patches_dir or default_patches_dir())


def _target(args: argparse.Namespace, root: Path) -> Path:
    return args.target or default_target(torch_version_at(root))


def _say(line: str) -> None:
    print(f"accel patches: {line}", file=sys.stderr)


def _list(args: argparse.Namespace) -> int:
    root, series = _load(args)
    print(
        f"torch {torch_version_at(root)} at {root}: {len(series.patches)} patches in {series.directory}"
        + (f", and {len(series.source_patches)} C++ patches not built here" if series.source_patches else "")
        + (f", and {len(series.test_patches)} to PyTorch's test files" if series.test_patches else "")
    )
    marks = {"source": "  [C++, not built here]", "tests": "  [PyTorch test tree: nox -s torch_tests]"}
    for patch in series.all_patches:
        print(f"  {patch.name}" + marks.get(patch.kind, ""))
        print(f"      {patch.subject}")
        print(f"      files: {', '.join(patch.files)}")
    return 0


def _check(args: argparse.Namespace) -> int:
    root, series = _load(args)
    print(f"series {series.directory} (for torch {series.torch_version}, chosen by the torch at {root})")
    results = check_series(series, root)
    for result in results:
        line = f"{result.state:8} {result.patch.name}"
        print(line + (f"\n         {result.detail}" if result.state in ("fails", "source", "tests") else ""))
    failed = sum(r.state == "fails" for r in results)
    applied = sum(r.state == "applied" for r in results)
    source = sum(r.state == "source" for r in results)
    tests = sum(r.state == "tests" for r in results)
    print(
        f"torch {torch_version_at(root)} at {root}: {len(results) - failed - applied - source - tests} apply, "
        f"{applied} already applied, {failed} fail"
        + (f"; {source} C++ patches not built here" if source else "")
        + (f"; {tests} for PyTorch's test tree" if tests else "")
    )
    return 1 if failed else 0


def _apply(args: argparse.Namespace) -> int:
    root, series = _load(args)
    target = _target(args, root)
    if args.in_place:
        try:
            manifest = apply_in_place(series, root, target, say=_say)
        except AlreadyAppliedError as exc:
            print(exc)
            return 0
        print(
            f"patched {len(manifest['files'])} files of torch under {root} in place; originals in {target}/backup"
        )
        print(f"undo with: accel patches revert --target {target}")
    else:
        manifest = write_overlay(series, root, target, say=_say)
        print(
            f"wrote the overlay ({len(manifest['files'])} patched modules, {len(series.patches)} patches) to {target}"
        )
        print(f"run with it: python -m accel_abstraction.patching.run --overlay {target} script.py")
    return 0


def _revert(args: argparse.Namespace) -> int:
    root = args.torch_root or installed_torch_root()
    target = _target(args, root)
    manifest = revert(target, root, say=_say)
    if manifest["mode"] == "in-place":
        print(
            f"restored {len(manifest['files'])} original files under {manifest['torch_root']}; "
            + (f"kept {target} (files apply did not write)" if target.exists() else f"removed {target}")
        )
    else:
        print(
            f"removed the overlay's files from {target}; kept the folder (files apply did not write)"
            if target.exists()
            else f"removed the overlay {target}"
        )
    return 0


def _rebase(args: argparse.Namespace) -> int:
    from .rebase import rebase_series

    root = args.torch_root or installed_torch_root()
    patches_dir = args.patches_dir or default_patches_dir()
    report = rebase_series(load_series(args.source, patches_dir), root, patches_dir, replace=args.replace)
    print(f"wrote {report.directory}: {len(report.rebased)} rebased onto torch {torch_version_at(root)}")
    for name in report.fuzzed:
        print(f"  FUZZED   {name}  rebased with patch --fuzz=2 (its context changed): read it")
    for name in report.dropped:
        print(f"  DROPPED  {name}  the replaced series does not carry it (its series file says why)")
    for name in report.kept:
        print(f"  KEPT     {name}  the replaced series' own (hand-ported) copy, which applies")
    for name in report.copied:
        print(f"  copied   {name}  (C++ or PyTorch test files: the wheel has no copy of its files to rebase against)")
    for name, why in report.failed.items():
        print(f"  PORT     {name}  copied unchanged, a person must port it: {why}")
    print("next: accel patches check, then the patch tests (pytest tests/patches) on this release")
    return 1 if report.failed else 0


def _run(args: argparse.Namespace) -> int:
    """``accel patches run``: :mod:`.run` in a fresh interpreter, so the overlay is active before torch loads."""
    import subprocess

    if args.module is None and not args.script:
        raise ConfigError("accel patches run: give a script (accel patches run train.py --its --args) or -m MODULE")
    command = [sys.executable, "-m", "accel_abstraction.patching.run"]
    if args.target is not None:
        command += ["--overlay", str(args.target)]
    if args.module is not None:
        command += ["-m", args.module]
    proc = subprocess.run([*command, *args.script], check=False)
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point (``python -m accel_abstraction.patching``), same errors as ``accel``."""
    from ..cli import Parser
    from ..exits import run_command

    parser = Parser(
        prog="accel patches", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    _configure(parser)
    args = parser.parse_args(argv)
    return run_command(lambda: args.func(args))
