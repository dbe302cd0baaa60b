"""Running over many files (a scan, a port): file discovery, plugin rules, process pool, progress."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import signal
import sys
import tokenize
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar

from ..errors import PluginError
from .findings import FileResult
from .notebooks import scan_notebook
from .rules import BUILTIN_RULES, RULES_BY_CODE, Rule
from .scanner import RULE_PLUGINS, scan_source

#: Above this many files the scan runs in a process pool.
PARALLEL_THRESHOLD = 64
#: Progress is drawn (on stderr, when it is a terminal) from this many files on.
PROGRESS_THRESHOLD = 50
T = TypeVar("T")
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages"}


def load_rules() -> tuple[Rule, ...]:
    """Every rule, the built-in ones first: what plugins register through the ``accel_scan_rules(register)`` hook.

    The built-in rules are a plugin too (:mod:`.rules`, registered here with the host, not
    through an entry point, so ``ACCEL_PLUGINS`` cannot remove them). Each plugin is asked
    separately: one that raises, registers something that is not a :class:`Rule`, a rule
    that matches nothing, or a code already taken contributes no rules (a
    ``RuntimeWarning`` names it); the others' rules are used. Returns the built-in rules
    when the plugin manager is not there (the scanner works alone).
    """
    try:
        from accel_abstraction.plugins import get_host
    except ImportError:
        return BUILTIN_RULES
    from . import rules as builtin

    host = get_host("tools")  # scan rules need no backend: no backends module is imported
    if host.pm.get_plugin(builtin.BUILTIN_PLUGIN_NAME) is None:
        host.pm.register(builtin, name=builtin.BUILTIN_PLUGIN_NAME)
    known: set[str] = set()

    def check(rule: object) -> None:
        if not isinstance(rule, Rule):
            raise PluginError(
                f"accel_scan_rules: register() takes accel_abstraction.porting.rules.Rule, got {type(rule).__name__}"
            )
        built_in = RULES_BY_CODE.get(rule.code) is rule  # its shapes are found by the scanner's traversal
        if rule.matcher is None and not rule.names and not built_in:
            raise PluginError(f"accel_scan_rules: rule {rule.code} needs names=... or matcher=... to match anything")
        if (rule.apis or rule.calls) and not built_in:
            raise PluginError(
                f"accel_scan_rules: rule {rule.code} has apis=... or calls=..., which the scanner reads from the "
                "built-in rules only: report with names=... or matcher=..., and rewrite with a Match(fix=...)"
            )
        if rule.code in known or (rule.code in RULES_BY_CODE and not built_in):
            raise PluginError(f"accel_scan_rules: rule code {rule.code} is registered twice; codes must be unique")
        known.add(rule.code)

    pairs = host.collect("accel_scan_rules", check)
    pairs.sort(key=lambda pair: pair[0] != builtin.BUILTIN_PLUGIN_NAME)  # stable: built-ins first
    RULE_PLUGINS.update((rule.code, plugin) for plugin, rule in pairs if plugin != builtin.BUILTIN_PLUGIN_NAME)
    return tuple(rule for _, rule in pairs)


#: File name endings read by the scanner: Python sources and Jupyter notebooks (code cells).
SUFFIXES = (".py", ".pyi", ".ipynb")


def iter_python_files(paths: Iterable[Path], exclude: Sequence[str] = (), root: Path | None = None) -> Iterator[Path]:
    """Python files and notebooks under ``paths`` (files are taken as given), sorted,
    skipping hidden folders and anything that is not a regular file (a FIFO named
    ``x.py`` would block a reader forever)."""

    def excluded(path: Path) -> bool:
        if not exclude:
            return False
        text = path.as_posix()
        if root is not None:
            try:
                text = path.resolve().relative_to(root).as_posix()
            except ValueError:
                pass
        return any(fnmatch.fnmatch(text, pattern) for pattern in exclude)

    for path in paths:
        if path.is_dir():
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
                for name in sorted(files):
                    if name.endswith(SUFFIXES):
                        candidate = Path(folder, name)
                        if candidate.is_file() and not excluded(candidate):
                            yield candidate
        elif not excluded(path):
            yield path


def read_source(path: Path) -> tuple[str, str]:
    """The file's text and its encoding (PEP 263 cookie or BOM honoured).

    Raises ``OSError`` (also for anything but a regular file), ``UnicodeDecodeError``, or
    ``SyntaxError`` for an unknown or contradictory encoding cookie (``# coding: foobar``):
    text written back under such a cookie would not parse.
    """
    if not path.is_file():
        raise OSError(f"{path} is not a regular file")
    return decode_source(path.read_bytes())


def decode_source(data: bytes) -> tuple[str, str]:
    """:func:`read_source` of bytes already read."""
    lines = iter(data.splitlines(keepends=True))
    encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
    if encoding == "utf-8-sig":
        return data[3:].decode("utf-8"), "utf-8-sig"
    return data.decode(encoding), encoding


def worker_loads_rules(rules: Sequence[Rule] | None) -> bool:
    """Whether a worker process must load the rules through the hook (plugin rules: their matchers
    need not be picklable); otherwise it uses the built-in ones."""
    return rules is not None and tuple(rules) != BUILTIN_RULES


def rules_in_worker(load: bool) -> tuple[Rule, ...]:
    """The rules a worker process scans with (:func:`worker_loads_rules`)."""
    return load_rules() if load else BUILTIN_RULES


# Worker-process state, set by _init_worker: (rules, enabled, strict).
_worker_options: tuple[tuple[Rule, ...], Callable[[str], bool] | None, bool] = ((), None, False)


def _init_worker(enabled: Callable[[str], bool] | None, load_rules: bool, strict: bool) -> None:
    global _worker_options
    _worker_options = (rules_in_worker(load_rules), enabled, strict)


def scan_file(
    path: Path,
    rules: Sequence[Rule] | None = None,
    enabled: Callable[[str], bool] | None = None,
    strict: bool = False,
) -> FileResult:
    """Scan one file on disk (a notebook: each code cell, see :mod:`.notebooks`); ``rules`` as for
    :func:`~.scanner.scan_source`.

    ``strict``: files the text pre-check would skip are still parsed, so a syntax error
    is reported (``accel scan --check``).
    """
    if path.suffix == ".ipynb":
        return scan_notebook(path, rules, enabled)
    try:
        source, _ = read_source(path)
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        return FileResult(str(path), error=f"{path}: cannot read: {exc}")
    result = scan_source(source, str(path), rules, enabled)
    if strict and result.skipped:
        result = scan_source(source, str(path), rules, enabled, precheck=False)
    return result


def _scan_in_worker(path: Path) -> FileResult:
    return scan_file(path, *_worker_options)


def scan_paths(
    files: Sequence[Path],
    rules: Sequence[Rule] | None = None,
    enabled: Callable[[str], bool] | None = None,
    jobs: int | None = None,
    progress: bool = False,
    strict: bool = False,
) -> list[FileResult]:
    """Scan ``files``; in a process pool when there are more than :data:`PARALLEL_THRESHOLD`.

    ``rules`` as for :func:`~.scanner.scan_source` (:func:`load_rules` gives every plugin's).
    ``enabled`` must be picklable (a :class:`~.settings.Selection`) for the pool.  Plugin
    rules are loaded again inside each worker, as their matchers need not be picklable.
    """
    return list(
        map_files(
            files,
            lambda path: scan_file(path, rules, enabled, strict),
            _scan_in_worker,
            (_init_worker, (enabled, worker_loads_rules(rules), strict)),
            jobs,
            "scanning" if progress else None,
        )
    )


def map_files(
    files: Sequence[Path],
    serial: Callable[[Path], T],
    parallel: Callable[[Path], T],
    worker_init: tuple[Callable[..., None], tuple[object, ...]],
    jobs: int | None = None,
    progress: str | None = None,
) -> Iterator[T]:
    """``serial(path)`` for each file, or ``parallel(path)`` in a pool of ``jobs`` worker processes
    (default: the CPU count) set up by ``worker_init`` (function, arguments) when there are
    more than :data:`PARALLEL_THRESHOLD` files; results in the order of ``files``, as they come.

    ``progress``: the label of a progress display on stderr (None: none).
    """
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    bar = make_progress(len(files), progress) if progress else None
    try:
        if workers > 1 and len(files) > PARALLEL_THRESHOLD:
            chunk = max(1, min(64, len(files) // (workers * 8)))
            pool = ProcessPoolExecutor(max_workers=workers, initializer=_start_worker, initargs=worker_init)
            try:
                for result in pool.map(parallel, files, chunksize=chunk):
                    if bar:
                        bar.advance()
                    yield result
            except BaseException:  # SIGTERM (SystemExit), Ctrl-C, a closed pipe: stop the workers now
                _stop_workers(pool)
                raise
            pool.shutdown()
        else:
            for path in files:
                result = serial(path)
                if bar:
                    bar.advance()
                yield result
    finally:
        if bar:
            bar.close()


def _start_worker(initializer: Callable[..., None], initargs: tuple[object, ...]) -> None:
    """A pool worker's set-up: SIGTERM ends it at once (the parent's SIGTERM handler, inherited
    by fork, would hand the worker's ``SystemExit`` back as a result and go on), then ``initializer``."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    initializer(*initargs)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End a pool whose caller is going away: no further file is started, running workers are
    terminated (a file being written is either whole or untouched: writes are renames)."""
    processes = list(getattr(pool, "_processes", {}).values())  # the pool has no public handle
    for process in processes:
        with contextlib.suppress(OSError, AttributeError):
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(timeout=5)


def want_progress(choice: bool | None, count: int) -> bool:
    """``--progress``/``--no-progress``, or by default: stderr is a terminal and the tree is large."""
    if choice is not None:
        return choice
    return sys.stderr.isatty() and count >= PROGRESS_THRESHOLD


class Progress(Protocol):
    def advance(self) -> None: ...
    def close(self) -> None: ...


def make_progress(total: int, label: str) -> Progress:
    """A bar on a terminal; elsewhere (a CI log, a file) plain ``LABEL: N/TOTAL files`` lines."""
    return _Bar(total, label) if sys.stderr.isatty() else _Lines(total, label)


class _Lines:
    """One stderr line per tenth of the files, and one at the end: readable in a log."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done = total, label, 0
        self.step = max(1, total // 10)

    def advance(self) -> None:
        self.done += 1
        if self.done % self.step == 0 or self.done == self.total:
            print(f"{self.label}: {self.done}/{self.total} files", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


class _Bar:
    """A rich progress bar on stderr (a terminal)."""

    def __init__(self, total: int, label: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        self.progress = RichProgress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.progress.add_task(label, total=total)
        self.progress.start()

    def advance(self) -> None:
        self.progress.advance(self.task)

    def close(self) -> None:
        self.progress.stop()
