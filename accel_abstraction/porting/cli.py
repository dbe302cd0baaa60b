"""``accel scan`` and ``accel port``: argument parsing and exit codes only.

Exit codes: 0 clean (or findings without ``--check``), 1 ``--check`` found something or a
file could not be read/parsed, 2 usage or configuration error (from the ``accel`` CLI).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import ConfigError
from ..settings import find_pyproject
from . import cli_options, report
from .apply import port_file, unified_diff
from .rules import BUILTIN_RULES, Rule
from .runner import iter_python_files, load_plugin_rules, scan_paths, want_progress
from .settings import Selection, build_selection, load_settings


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} worker processes: give 1 or more")
    return value


def _split(values: list[str] | None) -> list[str]:
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders to read")
    parser.add_argument("--select", action="append", metavar="CODES", help="only these codes, prefixes or categories (comma-separated)")
    parser.add_argument("--ignore", action="append", metavar="CODES", help="never these codes, prefixes or categories")
    parser.add_argument("--config", type=Path, metavar="PYPROJECT", help="pyproject.toml to read [tool.accel.scan] from (default: nearest)")
    parser.add_argument("--check", action="store_true", help="exit 1 when something is found")


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``scan`` and ``port`` subcommands."""
    scan = subparsers.add_parser(
        "scan",
        help="find CUDA coupling in Python code (reads it; never imports or runs it)",
        description="Report CUDA-specific code as file:line:col CODE message (suggested rewrite).",
    )
    _common(scan)
    scan.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    scan.add_argument("--output", "-o", type=Path, help="write the report to this file instead of stdout")
    scan.add_argument("--jobs", "-j", type=_positive_int, default=None, help="worker processes for large trees (default: CPU count)")
    scan.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None, help="progress bar on stderr (default: on a terminal, for large trees)")
    scan.set_defaults(func=run_scan)

    port = subparsers.add_parser(
        "port",
        help="rewrite CUDA coupling to the accel_abstraction API (prints a diff; --write changes files)",
        description="Rewrite every portable site; report the sites that need a person.",
    )
    _common(port)
    port.add_argument("--write", action="store_true", help="change the files in place (atomically)")
    port.set_defaults(func=run_port)


def _prepare(args: argparse.Namespace) -> tuple[list[Path], tuple[Rule, ...], Selection]:
    for path in args.paths:
        if not path.exists():
            raise ConfigError(f"path {path} does not exist; pass files or folders to read")
    if args.config is not None and not args.config.is_file():
        what = "is a folder" if args.config.is_dir() else "does not exist"
        raise ConfigError(f"--config {args.config} {what}; pass a pyproject.toml file")
    pyproject = args.config or find_pyproject(args.paths[0])
    settings = load_settings(pyproject, select=_split(args.select), ignore=_split(args.ignore))
    plugin_rules = load_plugin_rules()
    source = f"[tool.accel.scan] in {pyproject} or --select/--ignore" if pyproject else "--select/--ignore"
    selection = build_selection(settings, BUILTIN_RULES + plugin_rules, source)
    root = pyproject.parent.resolve() if pyproject else None
    files = list(iter_python_files(args.paths, settings.exclude, root))
    return files, plugin_rules, selection


def _check_output(path: Path) -> None:
    """Fail before scanning, not after, when the report cannot be written to ``path``."""
    if path.is_dir():
        raise ConfigError(f"--output {path} is a folder; give a file name")
    parent = path.parent
    if not parent.is_dir():
        raise ConfigError(f"--output {path}: folder {parent} does not exist; create it or pick another path")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ConfigError(f"--output {path}: not writable; pick another path")


def run_scan(args: argparse.Namespace) -> int:
    if args.output:
        _check_output(args.output)
    files, plugin_rules, selection = _prepare(args)
    progress = want_progress(args.progress, len(files))
    results = scan_paths(files, plugin_rules, selection, args.jobs, progress, strict=args.check)
    if args.format == "json":
        text = report.to_json(results)
    elif args.format == "sarif":
        text = report.to_sarif(results, BUILTIN_RULES + plugin_rules)
    else:
        text = report.to_text(results)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    errors = [r.error for r in results if r.error]
    for error in errors:
        print(f"accel scan: {error}", file=sys.stderr)
    counts = report.summary(results)
    if args.format == "text":
        print(
            f"{counts['findings']} finding(s) in {counts['files_with_findings']} of {counts['files']} file(s); "
            f"{counts['portable']} portable by `accel port`, {counts['manual']} need a person",
            file=sys.stderr,
        )
    if errors:
        return 1
    return 1 if args.check and counts["findings"] else 0


def run_port(args: argparse.Namespace) -> int:
    from .codemod import PortResult  # needs libcst: the `port` extra, not `accel scan`

    files, _plugin_rules, selection = _prepare(args)
    write = args.write and not args.check
    changed = manual = 0
    failed: list[str] = []
    options: list[cli_options.CudaOption] = []
    for path in files:
        try:
            result = port_file(path, selection, write=write)
        except Exception as exc:  # noqa: BLE001 - one file's bug must not leave the tree half ported unreported
            result = PortResult(str(path), "", "", error=f"{path}: internal error {type(exc).__name__}: {exc}; file left unchanged")
        for leftover in result.cleaned:
            print(f"accel port: removed {leftover}, left by an interrupted earlier run", file=sys.stderr)
        if result.error:
            failed.append(str(path))
            print(f"accel port: {result.error}", file=sys.stderr)
            continue
        if result.changed:
            changed += 1
            if write:
                print(f"ported {path} ({len(result.applied)} site(s))", file=sys.stderr)
            elif not args.check:
                sys.stdout.write(unified_diff(result))
        for finding in result.manual:
            manual += 1
            print(f"{report.format_finding(finding)} [not ported]", file=sys.stderr)
        options += cli_options.find(result.source, result.path)
    if options:
        print("command-line options of the ported program that name CUDA (change how it is started):", file=sys.stderr)
        for option in options:
            print(f"  {option}", file=sys.stderr)
    verb = "ported" if write else "would port"
    print(f"{verb} {changed} file(s); {manual} site(s) need a person; {len(options)} command-line option(s) name CUDA; "
          f"{len(failed)} error(s)", file=sys.stderr)  # fmt: skip
    if failed:
        if write:
            print(f"not written ({len(failed)}; each unchanged on disk): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 1 if args.check and changed else 0
