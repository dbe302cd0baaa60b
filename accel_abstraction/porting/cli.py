"""``accel scan`` and ``accel port``: argument parsing and exit codes only.

Exit codes, as ruff and flake8 give them: ``accel scan`` 0 clean, 1 something found or a file
could not be read/parsed (``--exit-zero``: 0 all the same, report only); ``accel port`` 0, or 1
with ``--check`` when a file would be rewritten, 1 when a file could not be read/parsed; 2 usage
or configuration error (from the ``accel`` CLI).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..exits import terminate_on_sigterm
from ..safe_io import atomic_write, dir_lock
from ..settings import find_pyproject
from . import cli_options, report
from .apply import PortOptions, port_paths, unified_diff
from .rules import Rule
from .runner import iter_python_files, load_rules, scan_paths, want_progress
from .settings import Selection, build_selection, load_settings

if TYPE_CHECKING:
    from .codemod import PortResult

#: Most worker processes ``accel scan -j`` starts (each is a Python interpreter).
MAX_JOBS = 256


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} worker processes: give 1 or more")
    if value > MAX_JOBS:
        raise argparse.ArgumentTypeError(
            f"{value} worker processes: give at most {MAX_JOBS} (this machine has {os.cpu_count() or 1} CPUs)"
        )
    return value


def _split(values: list[str] | None) -> list[str]:
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders to read")
    parser.add_argument("--select", action="append", metavar="CODES", help="only these codes, prefixes or categories (comma-separated)")
    parser.add_argument("--ignore", action="append", metavar="CODES", help="never these codes, prefixes or categories")
    parser.add_argument("--config", type=Path, metavar="PYPROJECT", help="pyproject.toml to read [tool.accel.scan] from (default: nearest)")
    parser.add_argument("--jobs", "-j", type=_positive_int, default=None, help="worker processes for large trees (default: CPU count)")
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="show progress on stderr: a bar on a terminal, plain lines elsewhere (default: on a terminal, for large trees)",
    )  # fmt: skip


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``scan`` and ``port`` subcommands."""
    scan = subparsers.add_parser(
        "scan",
        help="find CUDA coupling in Python code (reads it; never imports or runs it)",
        description="Report CUDA-specific code as file:line:col CODE message (suggested rewrite). Exit 1 when "
        "something is found or a file cannot be read (as ruff and flake8), 0 when clean or with --exit-zero, "
        "2 on a usage or configuration error. '# noqa: ACC111' or '# accel: ignore[ACC111]' suppresses a finding.",
    )
    _common(scan)
    exits = scan.add_mutually_exclusive_group()
    exits.add_argument(
        "--check", action="store_true",
        help="also parse files with no CUDA word, so a syntax error anywhere fails (the pre-commit hook passes it); "
        "findings exit 1 with or without it",
    )  # fmt: skip
    exits.add_argument("--exit-zero", action="store_true", help="exit 0 even when something is found (report only)")
    scan.add_argument(
        "--format", choices=("text", "json", "sarif"), default="text",
        help="text: file:line:col CODE message per finding, a summary on stderr (default); json: one document; "
        "sarif: SARIF 2.1.0 for code-scanning UIs",
    )  # fmt: skip
    scan.add_argument("--output", "-o", type=Path, help="write the report to this file instead of stdout")
    scan.set_defaults(func=run_scan)

    port = subparsers.add_parser(
        "port",
        help="rewrite CUDA coupling to the accel_abstraction API (prints a diff; --write changes files)",
        description="Rewrite every portable site; report the sites that need a person.",
    )
    _common(port)
    port.add_argument("--check", action="store_true", help="write nothing, print no diff; exit 1 when a file would be rewritten")
    port.add_argument("--write", action="store_true", help="change the files in place (atomically)")
    port.add_argument(
        "--format", choices=("diff", "json"), default="diff",
        help="diff: a unified diff on stdout (default); json: one JSON document with every file's sites, diff and error",
    )  # fmt: skip
    port.add_argument(
        "--follow-links",
        action="store_true",
        help="with --write, also write files reached through a symlink leaving the tree, and hard-linked files",
    )
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
    rules = load_rules()
    source = f"[tool.accel.scan] in {pyproject} or --select/--ignore" if pyproject else "--select/--ignore"
    selection = build_selection(settings, rules, source)
    root = pyproject.parent.resolve() if pyproject else None
    files = list(iter_python_files(args.paths, settings.exclude, root))
    return files, rules, selection


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
    files, rules, selection = _prepare(args)
    progress = want_progress(args.progress, len(files))
    results = scan_paths(files, rules, selection, args.jobs, progress, strict=args.check)
    if args.format == "json":
        text = report.to_json(results)
    elif args.format == "sarif":
        text = report.to_sarif(results, rules)
    else:
        text = report.to_text(results)
    if args.output:
        atomic_write(args.output, text, what="--output")
    else:
        sys.stdout.write(text)
    errors = [r.error for r in results if r.error] + [note for r in results for note in r.notes]
    for error in errors:
        print(f"accel scan: {error}", file=sys.stderr)
    counts = report.summary(results)
    if args.format == "text":
        print(
            f"{counts['findings']} finding(s) in {counts['files_with_findings']} of {counts['files']} file(s); "
            f"{counts['portable']} portable by `accel port`, {counts['manual']} need a person",
            file=sys.stderr,
        )
    if args.exit_zero:
        return 0
    return 1 if errors or counts["findings"] else 0


def run_port(args: argparse.Namespace) -> int:
    from . import codemod  # noqa: F401  # needs libcst (the `port` extra): one error line here, not one per file

    files, rules, selection = _prepare(args)
    write = args.write and not args.check
    if not write:
        return _port(args, files, PortOptions(selection, rules=rules))
    roots = sorted({(p if p.is_dir() else p.parent).resolve() for p in args.paths})
    stopped = "accel port --write: stopped by {signal}; each file is either ported or unchanged, run it again to finish"
    with contextlib.ExitStack() as locks:
        locks.enter_context(terminate_on_sigterm(stopped))
        for root in roots:  # sorted: two runs take overlapping locks in one order
            locks.enter_context(dir_lock(root, "accel port --write"))
        return _port(args, files, PortOptions(selection, True, roots, args.follow_links, rules))


def _port(args: argparse.Namespace, files: list[Path], how: PortOptions) -> int:
    as_json = args.format == "json"
    changed = manual = 0
    failed: list[str] = []
    options: list[cli_options.CudaOption] = []
    entries: list[dict[str, object]] = []
    progress = want_progress(args.progress, len(files))
    results = port_paths(files, how, jobs=args.jobs, progress=progress)
    write = how.write
    for result in results:
        path = result.path
        for leftover in result.cleaned:
            print(f"accel port: removed {leftover}, left by an interrupted earlier run", file=sys.stderr)
        if as_json:
            entries.append(_port_entry(result))
        if result.error:
            failed.append(path)
            print(f"accel port: {result.error}", file=sys.stderr)
            continue
        if result.changed:
            changed += 1
            if write and not as_json:
                print(f"ported {path} ({len(result.applied)} site(s))", file=sys.stderr)
            elif not args.check and not as_json:
                sys.stdout.write(unified_diff(result))
        manual += len(result.manual)
        if not as_json:
            for finding in result.manual:
                print(f"{report.format_finding(finding)} [not ported]", file=sys.stderr)
            for line in result.long_lines:
                print(f"{path}:{line}: note: the port made this line longer than {result.line_limit} characters; wrap it",
                      file=sys.stderr)  # fmt: skip
        options += cli_options.find(result.source, result.path)
    verb = "ported" if write else "would port"
    if as_json:
        summary = {"files": len(files), "changed": changed, "manual": manual, "errors": len(failed), "written": write}
        document = {"version": 1, "files": entries, "cuda_options": [str(o) for o in options], "summary": summary}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        if options:
            print("command-line options of the ported program that name CUDA (change how it is started):", file=sys.stderr)
            for option in options:
                print(f"  {option}", file=sys.stderr)
        print(f"{verb} {changed} file(s); {manual} site(s) need a person; {len(options)} command-line option(s) name CUDA; "
              f"{len(failed)} error(s)", file=sys.stderr)  # fmt: skip
    if failed:
        if write and not as_json:
            print(f"not written ({len(failed)}; each unchanged on disk): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 1 if args.check and changed else 0


def _port_entry(result: PortResult) -> dict[str, object]:
    """One file of ``accel port --format json``."""
    return {
        "path": result.path,
        "changed": result.changed and not result.error,
        "written": result.written,
        "applied": [f.to_dict() for f in result.applied],
        "manual": [f.to_dict() for f in result.manual],
        "long_lines": result.long_lines,
        "error": result.error,
        "diff": unified_diff(result) if result.changed and not result.error else "",
    }
