"""Plugin loading: entry points of the group ``accel_abstraction``, isolated from each other.

Built-in backends (cpu, cuda, neuron) are distributions of their own and load through this
same path, exactly like a third-party plugin.

Environment:

* ``ACCEL_PLUGINS=cpu,neuron``: allow-list of plugin (entry-point) or distribution names;
  anything else installed is skipped. Naming a plugin that is not installed is an error.
* ``ACCEL_DISABLE_PLUGIN_AUTOLOAD=1``: load no entry point except those named in
  ``ACCEL_PLUGINS``; plugins registered in code with :func:`register_plugin` still load.

* ``ACCEL_PLUGIN_IMPORT_TIMEOUT=10``: seconds a plugin's import may take (``0``: no bound);
  one still running its own module's code then is marked failed, named, and the others load
  (an import of another package it makes, such as torch, is never cut half-way).

Plugin code cannot take the host down: anything a plugin's import or hook raises
(``SystemExit`` and other ``BaseException`` subclasses included; only ``KeyboardInterrupt``
still interrupts) marks that plugin ``failed`` (or drops that hook's part): a warning names
it, the others load, and ``accel info`` shows its traceback. What plugin code prints on
stdout is captured into its record (``accel info`` shows it), never mixed into a command's
machine-readable output.

Load order: the project's built-in plugins first (the entry points the ``accel-abstraction``
distribution lists in its group ``accel_abstraction.builtin``), then the others by name; so
a third-party plugin that claims a built-in backend or command name loses it, and the clash
is reported. Two distributions offering the same entry-point name: the first found loads,
the other is recorded as failed with both named (never dropped without a word).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import signal
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, entry_points
from typing import Any, Literal

import pluggy

from . import hookspecs
from .errors import ConfigError, PluginError, did_you_mean
from .registry import BackendRegistry, BackendSpec

__all__ = ["HookCall", "PluginHost", "PluginRecord", "get_host", "register_plugin", "reset"]

ENTRY_POINT_GROUP = "accel_abstraction"
#: Group in the ``accel-abstraction`` distribution's own metadata listing its built-in plugins
#: (``name = module``, as they appear in :data:`ENTRY_POINT_GROUP`).
BUILTIN_GROUP = "accel_abstraction.builtin"
CORE_DISTRIBUTION = "accel-abstraction"
IMPORT_TIMEOUT_ENV = "ACCEL_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT_S = 10.0
_TRUE = {"1", "true", "yes", "on"}

Status = Literal["loaded", "failed", "skipped"]


@dataclass
class PluginRecord:
    """What happened to one plugin."""

    name: str
    distribution: str = ""
    version: str = ""
    status: Status = "loaded"
    error: str = ""
    traceback: str = ""
    backends: list[str] = field(default_factory=list)
    #: Hooks of a loaded plugin whose contribution was dropped (junk scan rules, ...), with why.
    problems: list[str] = field(default_factory=list)
    #: What the plugin's code printed on stdout (captured: never part of a command's output).
    output: str = ""
    #: One of the project's own plugins (:data:`BUILTIN_GROUP`): wins a name clash.
    builtin: bool = False


class PluginHost:
    """A pluggy manager with the plugins loaded and their backends registered."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.registry = BackendRegistry()

    # -- loading --------------------------------------------------------------

    def load(self, extra: list[tuple[str, Any]] | None = None) -> None:
        """Load entry-point plugins (as the environment allows), then ``extra`` ones, then register backends."""
        allow = _allow_list()
        autoload = os.environ.get("ACCEL_DISABLE_PLUGIN_AUTOLOAD", "").strip().lower() not in _TRUE
        eps, duplicates = _discover()
        if allow is not None:
            available = {ep.name for ep in eps} | {_dist_name(ep) for ep in eps}
            for wanted in allow:
                if wanted not in available:
                    raise ConfigError(
                        f"ACCEL_PLUGINS names {wanted!r}, which is not installed; installed plugins: "
                        f"{', '.join(sorted(ep.name for ep in eps)) or 'none'}.{did_you_mean(wanted, available)}"
                    )
        bound = _import_timeout()
        for ep in eps:
            dist = _dist_name(ep)
            record = PluginRecord(ep.name, dist, _dist_version(ep), builtin=_is_builtin(ep))
            self.records[ep.name] = record
            named = allow is not None and (ep.name in allow or dist in allow)
            if (allow is not None and not named) or (not autoload and not named):
                record.status = "skipped"
                record.error = "not in ACCEL_PLUGINS" if allow is not None else "ACCEL_DISABLE_PLUGIN_AUTOLOAD=1"
                continue
            try:
                with self.captured(record):
                    module = _bounded_load(ep, bound)
            except KeyboardInterrupt:
                raise
            except _ImportTooSlow:
                self._fail(
                    record,
                    f"import took longer than {bound:g} s and was abandoned; make the plugin's import cheaper "
                    f"(defer heavy work to its hooks), or raise {IMPORT_TIMEOUT_ENV}",
                    error=None,
                )
                continue
            except BaseException as exc:  # noqa: BLE001 - a broken plugin (sys.exit included) must not take the others down
                self._fail(record, f"import failed: {_describe(exc)}")
                continue
            self._register(record, module)
        for ep, kept in duplicates:
            dist = _dist_name(ep) or "unknown distribution"
            record = PluginRecord(f"{ep.name} ({dist})", dist, _dist_version(ep))
            self.records[record.name] = record
            self._fail(
                record,
                f"entry point name {ep.name!r} is also offered by {_dist_name(kept) or 'unknown distribution'}, "
                f"which loaded; this one was not loaded: uninstall one of the two distributions",
                error=None,
            )
        for name, obj in extra or []:
            record = PluginRecord(name, "(registered in code)")
            self.records[name] = record
            self._register(record, obj)
        self._register_backends()
        skipped = sorted(r.name for r in self.records.values() if r.status == "skipped")
        if skipped and not any(r.backends for r in self.records.values()):
            self.registry.empty_reason = (
                f"no backend is registered: the environment skipped every installed plugin "
                f"({', '.join(skipped)}) because ACCEL_DISABLE_PLUGIN_AUTOLOAD=1 is set and ACCEL_PLUGINS names none "
                "of them; unset ACCEL_DISABLE_PLUGIN_AUTOLOAD or name plugins in ACCEL_PLUGINS"
                if allow is None
                else f"no backend is registered: ACCEL_PLUGINS={os.environ.get('ACCEL_PLUGINS', '')!r} allows no "
                f"plugin that registers one (installed: {', '.join(skipped)})"
            )

    def _register(self, record: PluginRecord, obj: Any) -> None:
        try:
            self.pm.register(obj, name=record.name)
        except Exception as exc:  # e.g. a hookimpl with a misspelled hook name
            self._fail(record, f"registration failed: {type(exc).__name__}: {exc}")

    def _fail(self, record: PluginRecord, message: str, unload: bool = True, error: BaseException | None = None) -> None:
        """Record and warn about a plugin's failure: fatal to the plugin (``unload``) or to one hook only.

        ``error``: the exception (default: the one being handled), whose traceback ``accel info`` shows.
        """
        if unload:
            record.status = "failed"
            record.error = message
            if error is not None:
                record.traceback = "".join(traceback.format_exception(error))
            else:
                current = traceback.format_exc()
                record.traceback = "" if current.startswith("NoneType: None") else current
        else:
            record.problems.append(message)
        outcome = "was not loaded" if unload else "was partly ignored"
        warnings.warn(
            f"accel-abstraction plugin {record.name!r} ({record.distribution or 'unknown distribution'}) "
            f"{outcome}: {message}. Run `accel info --tracebacks` for the traceback.",
            RuntimeWarning,
            stacklevel=4,
        )

    def _register_backends(self) -> None:
        """Call each plugin's ``accel_register_backends`` separately, so one failure stays local.

        A plugin's backends are registered all together or not at all: if it raises,
        registers something that is not a :class:`BackendSpec`, or claims a name or alias
        already taken (by an earlier plugin or by itself), the plugin is marked failed and
        blocked (pluggy's ``set_blocked``: its other hooks are not called either), and the
        backends of every other plugin stay usable. Calls are made in pluggy's order, and
        registered in load order (built-ins first): where two plugins claim one name, the
        first loaded keeps it.
        """
        order = {name: i for i, name in enumerate(self.records)}
        calls = sorted(self.call_each("accel_register_backends"), key=lambda c: order.get(c.plugin, len(order)))
        for call in calls:
            record = self.record_of(call.plugin)
            problem = (
                f"accel_register_backends raised {_describe(call.error)}"
                if call.error is not None
                else self._check_specs(record, call.items)
            )
            if problem:
                self._fail(record, problem, error=call.error)
                self.pm.set_blocked(call.plugin)
                continue
            for spec in call.items:
                self.registry.add(spec, record.name, record.distribution)
                record.backends.append(spec.name)

    def _check_specs(self, record: PluginRecord, specs: list[Any]) -> str:
        """Why ``specs`` cannot be registered as a whole (``""``: they can)."""
        origin = f"plugin {record.name!r} ({record.distribution or 'unknown distribution'})"
        claimed: set[str] = set()
        for spec in specs:
            if not isinstance(spec, BackendSpec):
                return (
                    f"{origin} registered {spec!r} ({type(spec).__name__}); register() takes an "
                    "accel_abstraction.BackendSpec"
                )
            if not isinstance(spec.name, str) or not spec.name.strip() or not callable(spec.factory):
                return f"{origin} registered {spec!r}: a BackendSpec needs a non-empty name and a callable factory"
            if not isinstance(spec.aliases, (tuple, list)) or not all(isinstance(a, str) for a in spec.aliases):
                return f"{origin} registered {spec.name!r} with aliases {spec.aliases!r}: a tuple of names is needed"
            if isinstance(spec.priority, bool) or not isinstance(spec.priority, (int, float)):
                return f"{origin} registered {spec.name!r} with priority {spec.priority!r}: a number is needed"
            for key in (spec.name, *spec.aliases):
                key = str(key).lower()
                if key in claimed:
                    return f"{origin} registers the backend name {key!r} twice"
                claimed.add(key)
                problem = self.registry.clash(key, origin)
                if problem:
                    return problem
        return ""

    def call_each(self, hook_name: str, **kwargs: Any) -> Iterator[HookCall]:
        """Call every plugin's implementation of ``hook_name`` on its own: the one way hooks are called.

        Implementations are called in pluggy's own order (what ``pm.hook.<name>()`` does):
        ``tryfirst`` ones first, ``trylast`` ones last, and within each the plugin
        registered last first. A hook with a ``register`` argument gets a fresh one per
        plugin, collecting into :attr:`HookCall.items`; ``kwargs`` are the hook's other
        arguments. Anything an implementation raises (a ``BaseException`` such as
        ``SystemExit`` included; ``KeyboardInterrupt`` excepted) is caught into
        :attr:`HookCall.error` with its traceback, never raised: each caller decides what it
        costs the plugin. What it prints on stdout goes to its record (:attr:`PluginRecord.output`).
        Hook wrappers (``hookwrapper=True`` / ``wrapper=True``) wrap one pluggy call of all
        implementations, which plugin-by-plugin calling never makes: they are refused, and
        the refusal is recorded on their plugin (``accel info``) with a warning naming it.
        A generator: stopping early (an error the caller re-raises) calls no further plugin.
        """
        hook = getattr(self.pm.hook, hook_name, None)
        if hook is None:
            return
        for impl in reversed(hook.get_hookimpls()):  # pluggy's _multicall order
            name = self.pm.get_name(impl.plugin) or ""
            if impl.hookwrapper or impl.wrapper:
                self._refuse_wrapper(name, hook_name)
                continue
            call = HookCall(name)
            available = {**kwargs, "register": call.items.append}
            try:
                with self.captured(self.records.get(name) or PluginRecord(name)):
                    call.value = impl.function(*[available[arg] for arg in impl.argnames])
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - the caller decides: drop the plugin's part, show it, re-raise
                call.error = exc
            yield call

    def _refuse_wrapper(self, plugin: str, hook_name: str) -> None:
        message = (
            f"its {hook_name} is a hook wrapper, which accel does not run: accel calls each plugin's "
            "implementation on its own (isolated), so there is no single call to wrap; implement "
            f"{hook_name} as a plain hook (tryfirst/trylast order it)"
        )
        record = self.record_of(plugin)
        if message not in record.problems:
            self._fail(record, message, unload=False, error=None)

    @contextlib.contextmanager
    def captured(self, record: PluginRecord) -> Iterator[None]:
        """Run plugin code with its stdout captured into ``record.output`` (stdout stays clean
        for JSON and SARIF output)."""
        buffer = io.StringIO()
        try:
            with contextlib.redirect_stdout(buffer):
                yield
        finally:
            record.output += buffer.getvalue()

    def record_of(self, plugin: str) -> PluginRecord:
        """The record of ``plugin`` (one registered on a manager by hand gets one on first use)."""
        return self.records.setdefault(plugin, PluginRecord(plugin, "(registered in code)"))

    def collect(self, hook_name: str, check: Callable[[Any], None], **kwargs: Any) -> list[tuple[str, Any]]:
        """Call a ``register``-style hook (``accel_scan_rules(register)``) plugin by plugin.

        Every item a plugin registers goes through ``check``, which raises (a
        :class:`PluginError` saying what is wrong) for junk. A plugin whose implementation
        raises, or registers junk, contributes nothing: a ``RuntimeWarning`` names it and
        ``accel info`` shows why. Returns ``(plugin name, item)`` pairs of the others, in
        :meth:`call_each` order.
        """
        collected: list[tuple[str, Any]] = []
        for call in self.call_each(hook_name, **kwargs):
            error = call.error
            if error is None:
                try:
                    for item in call.items:
                        check(item)
                except Exception as exc:  # one plugin's junk must not disable the tool for the others
                    error = exc
            if error is not None:
                what = "registered an invalid item" if isinstance(error, PluginError) else "raised"
                message = f"{hook_name} {what}: {_describe(error)}"
                self._fail(self.record_of(call.plugin), message, unload=False, error=error)
                continue
            collected.extend((call.plugin, item) for item in call.items)
        return collected


@dataclass
class HookCall:
    """One plugin's answer to a hook, from :meth:`PluginHost.call_each`."""

    plugin: str
    value: Any = None
    """What the implementation returned."""
    items: list[Any] = field(default_factory=list)
    """What it passed to ``register``."""
    error: BaseException | None = None
    """What it raised (its ``__traceback__`` says where); never ``KeyboardInterrupt``."""


def _describe(exc: BaseException | None) -> str:
    """``Type: message`` of what plugin code raised (``SystemExit: 3``)."""
    return f"{type(exc).__name__}: {exc}"


def _discover() -> tuple[list[EntryPoint], list[tuple[EntryPoint, EntryPoint]]]:
    """The entry points to load, built-in ones first then by name; and each one dropped
    because another distribution offers its name, with the one kept."""
    kept: dict[str, EntryPoint] = {}
    duplicates: list[tuple[EntryPoint, EntryPoint]] = []
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: not _is_builtin(ep))  # stable
    for ep in found:
        first = kept.setdefault(ep.name, ep)
        if first is not ep and _dist_name(first) != _dist_name(ep):  # same distribution twice on sys.path: one
            duplicates.append((ep, first))
    ordered = sorted(kept.values(), key=lambda ep: (not _is_builtin(ep), ep.name))
    return ordered, duplicates


def _builtin_entry_points() -> frozenset[tuple[str, str]]:
    """``(name, module)`` of the built-in plugins, from the core distribution's metadata
    (empty when it is not installed: then no plugin is preferred)."""
    try:
        eps = distribution(CORE_DISTRIBUTION).entry_points
    except PackageNotFoundError:
        return frozenset()
    return frozenset((ep.name, ep.value) for ep in eps if ep.group == BUILTIN_GROUP)


_builtins: frozenset[tuple[str, str]] | None = None


def _is_builtin(ep: EntryPoint) -> bool:
    global _builtins
    if _builtins is None:
        _builtins = _builtin_entry_points()
    return (ep.name, ep.value) in _builtins


class _ImportTooSlow(BaseException):
    """Raised into a plugin import that outlived :data:`IMPORT_TIMEOUT_ENV` (a BaseException:
    the plugin's own ``except Exception`` must not swallow it)."""


def _import_timeout() -> float:
    raw = os.environ.get(IMPORT_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_IMPORT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"{IMPORT_TIMEOUT_ENV}={raw!r} is not a number of seconds; give one such as 10 (0: no bound), or unset it"
        )
    return value


def _bounded_load(ep: EntryPoint, bound: float) -> Any:
    """``ep.load()``, interrupted by :class:`_ImportTooSlow` after ``bound`` seconds.

    The bound is a ``SIGALRM`` timer, so it holds only in the main thread and when no
    other timer is running (elsewhere the import is unbounded); the previous handler is
    put back. Only the plugin's own code is interrupted: while it is importing another
    package (torch, slow on a loaded machine), the alarm waits for that import to end, as
    a package interrupted half-way (torch's operator registrations made, its module
    dropped) could not be imported again in this process.
    """
    usable = (
        bound > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
    if not usable:
        return ep.load()
    own = ep.module.split(".", 1)[0]

    def expired(_signum: int, frame: Any) -> None:
        if _importing(frame) == own:
            raise _ImportTooSlow
        signal.setitimer(signal.ITIMER_REAL, 0.2)  # inside another package's import: ask again soon

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, bound)
    try:
        return ep.load()
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)


def _importing(frame: Any) -> str:
    """The top-level package of the innermost module whose body ``frame`` (or a caller) runs."""
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            return str(frame.f_globals.get("__name__", "")).split(".", 1)[0]
        frame = frame.f_back
    return ""


def _allow_list() -> list[str] | None:
    raw = os.environ.get("ACCEL_PLUGINS")
    if raw is None or not raw.strip():
        return None
    names = [part.strip() for part in raw.split(",") if part.strip()]
    if not names:
        raise ConfigError(
            f"ACCEL_PLUGINS={raw!r} names no plugin; list plugin names separated by commas "
            "(e.g. ACCEL_PLUGINS=cpu), or unset it to load every installed plugin"
        )
    return names


def _dist_name(ep: EntryPoint) -> str:
    return ep.dist.name if ep.dist is not None else ""


def _dist_version(ep: EntryPoint) -> str:
    return ep.dist.version if ep.dist is not None else ""


_host: PluginHost | None = None
_extra: list[tuple[str, Any]] = []
_lock = threading.RLock()


def get_host() -> PluginHost:
    """The process-wide plugin host, loaded on first call."""
    global _host
    if _host is None:
        with _lock:
            if _host is None:
                host = PluginHost()
                host.load(list(_extra))
                _host = host
    return _host


def register_plugin(obj: Any, name: str) -> None:
    """Register a plugin object from code (tests, applications), as if it had an entry point.

    Takes effect for the next load: call before first use, or call :func:`reset` after.
    """
    with _lock:
        _extra.append((name, obj))


def reset() -> None:
    """Forget loaded plugins and code-registered ones; the next use loads again. For tests."""
    global _host
    with _lock:
        _host = None
        _extra.clear()
