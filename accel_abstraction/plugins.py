"""Plugin loading: each plugin's entry points, isolated from each other and from the host.

Built-in backends (cpu, cuda, neuron) are distributions of their own and load through this
same path, exactly like a third-party plugin. Which entry points a command imports (a
plugin's backends and tools modules), the load order and the import bound are
:mod:`accel_abstraction.plugin_discovery`'s.

Environment: ``ACCEL_PLUGINS=cpu,neuron`` (allow-list of plugin or distribution names; naming
one not installed is an error); ``ACCEL_DISABLE_PLUGIN_AUTOLOAD=1`` (load no entry point
except those named in ``ACCEL_PLUGINS``; :func:`register_plugin` ones still load);
``ACCEL_PLUGIN_IMPORT_TIMEOUT=10`` (seconds a plugin's import may take, ``0``: no bound).

Plugin code cannot take the host down: anything a plugin's import or hook raises
(``SystemExit`` included; only ``KeyboardInterrupt`` still interrupts) marks that plugin
``failed`` (or drops that hook's part): a warning names it, the others load, and ``accel
info`` shows its traceback. What plugin code prints on stdout is captured into its record
(``accel info`` shows it), never mixed into a command's machine-readable output. Built-in
plugins load first, so a third-party one claiming a built-in name loses it, reported; two
distributions offering one entry-point name: the first loads, the other is recorded failed.
"""

from __future__ import annotations

import contextlib
import io
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import pluggy

from . import hookspecs
from .environment import flag, read
from .errors import ConfigError, PluginError, did_you_mean
from .plugin_discovery import (
    BACKENDS_GROUP,
    BUILTIN_GROUP,
    CORE_DISTRIBUTION,
    DEFAULT_IMPORT_TIMEOUT_S,
    ENTRY_POINT_GROUP,
    IMPORT_TIMEOUT_ENV,
    TOOLS_GROUP,
    ImportTooSlow,
    Scope,
    allow_list,
    bounded_load,
    discover,
    dist_name,
    dist_version,
    import_timeout,
    is_builtin,
)
from .registry import BackendRegistry

__all__ = [
    "BACKENDS_GROUP",
    "BUILTIN_GROUP",
    "CORE_DISTRIBUTION",
    "DEFAULT_IMPORT_TIMEOUT_S",
    "ENTRY_POINT_GROUP",
    "IMPORT_TIMEOUT_ENV",
    "TOOLS_GROUP",
    "HookCall",
    "PluginHost",
    "PluginRecord",
    "get_host",
    "register_plugin",
    "reset",
]


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
    #: Declares no capability (listed in :data:`ENTRY_POINT_GROUP` only): loaded by every command.
    legacy: bool = False


class PluginHost:
    """A pluggy manager with the plugins loaded and their backends registered."""

    def __init__(self, scope: Scope = "all") -> None:
        #: ``"tools"``: loaded for a command that needs no backend (``plugin_discovery``).
        self.scope: Scope = scope
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        #: pluggy name of a plugin's second module -> the plugin's name (its record).
        self._aliases: dict[str, str] = {}
        self.registry = BackendRegistry()

    # -- loading --------------------------------------------------------------

    def load(self, extra: list[tuple[str, Any]] | None = None) -> None:
        """Load entry-point plugins (as the environment allows), then ``extra`` ones, then register backends."""
        allow = allow_list()
        autoload = not flag("ACCEL_DISABLE_PLUGIN_AUTOLOAD")
        found, duplicates = discover(self.scope)
        if allow is not None:
            available = {p.name for p in found} | {dist_name(p.first) for p in found}
            for wanted in allow:
                if wanted not in available and self.scope == "all":  # a tools-only host sees fewer
                    raise ConfigError(
                        f"ACCEL_PLUGINS names {wanted!r}, which is not installed; installed plugins: "
                        f"{', '.join(sorted(p.name for p in found)) or 'none'}.{did_you_mean(wanted, available)}"
                    )
        bound = import_timeout()
        for plugin in found:
            ep = plugin.first
            dist = dist_name(ep)
            record = PluginRecord(plugin.name, dist, dist_version(ep), builtin=is_builtin(ep), legacy=plugin.legacy)
            self.records[plugin.name] = record
            named = allow is not None and (plugin.name in allow or dist in allow)
            if (allow is not None and not named) or (not autoload and not named):
                record.status = "skipped"
                record.error = "not in ACCEL_PLUGINS" if allow is not None else "ACCEL_DISABLE_PLUGIN_AUTOLOAD=1"
                continue
            for i, ep in enumerate(plugin.entry_points):  # its backends module, then its tools module
                module = self._import(record, ep, bound)
                if module is None:
                    break
                self._register(record, module, name=plugin.name if i == 0 else f"{plugin.name}:{ep.group}")
        for ep, kept in duplicates:
            dist = dist_name(ep) or "unknown distribution"
            record = PluginRecord(f"{ep.name} ({dist})", dist, dist_version(ep))
            self.records[record.name] = record
            self._fail(
                record,
                f"entry point name {ep.name!r} is also offered by {dist_name(kept) or 'unknown distribution'}, "
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
                else f"no backend is registered: ACCEL_PLUGINS={read('ACCEL_PLUGINS') or ''!r} allows no "
                f"plugin that registers one (installed: {', '.join(skipped)})"
            )

    def _import(self, record: PluginRecord, ep: Any, bound: float) -> Any:
        """The module of ``ep``, imported under the bound with its output captured; None when
        it failed (then ``record`` says why)."""
        try:
            with self.captured(record):
                return bounded_load(ep, bound)
        except KeyboardInterrupt:
            raise
        except ImportTooSlow:
            self._fail(
                record,
                f"import took longer than {bound:g} s and was abandoned (module {ep.value}); make the plugin's "
                f"import cheaper (defer heavy work to its hooks), or raise {IMPORT_TIMEOUT_ENV}",
                error=None,
            )
        except BaseException as exc:  # noqa: BLE001 - a broken plugin (sys.exit included) must not take the others down
            self._fail(record, f"import failed: {_describe(exc)}")
        return None

    def _register(self, record: PluginRecord, obj: Any, name: str | None = None) -> None:
        """Register ``obj`` (a plugin's module) under ``name`` (default: the plugin's; a
        plugin's second module gets its own name, its hooks still answer as the plugin)."""
        name = name or record.name
        if name != record.name:
            self._aliases[name] = record.name
        try:
            self.pm.register(obj, name=name)
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
                else self.registry.check_specs(f"plugin {record.name!r} ({record.distribution or 'unknown distribution'})", call.items)
            )
            if problem:
                self._fail(record, problem, error=call.error)
                self.pm.set_blocked(call.plugin)
                continue
            for spec in call.items:
                self.registry.add(spec, record.name, record.distribution)
                record.backends.append(spec.name)

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
            name = self._aliases.get(name, name)
            if impl.hookwrapper or impl.wrapper:
                self._refuse_wrapper(name, hook_name)
                continue
            call = HookCall(name)
            available = {**kwargs, "register": call.items.append}
            try:
                with self.captured(self.records.get(name) or PluginRecord(name)):  # no record for code-registered plugins
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
        plugin = self._aliases.get(plugin, plugin)
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


_hosts: dict[str, PluginHost] = {}
_extra: list[tuple[str, Any]] = []
_lock = threading.RLock()


def get_host(scope: Scope = "all") -> PluginHost:
    """The process-wide plugin host, loaded on first call.

    ``scope="tools"``: for a command that needs no backend (``accel scan``, ``port``,
    ``config``, ``patches``): only the plugins' tools modules and undeclared plugins are
    imported, never a backends module (:mod:`accel_abstraction.plugin_discovery`). A loaded
    full host serves it too.
    """
    host = _hosts.get(scope) or (_hosts.get("all") if scope == "tools" else None)
    if host is None:
        with _lock:
            host = _hosts.get(scope)
            if host is None:
                host = PluginHost(scope)
                host.load(list(_extra))
                _hosts[scope] = host
    return host


def register_plugin(obj: Any, name: str) -> None:
    """Register a plugin object from code (tests, applications), as if it had an entry point.

    Takes effect for the next load: call before first use, or call :func:`reset` after.
    """
    with _lock:
        _extra.append((name, obj))


def reset() -> None:
    """Forget loaded plugins and code-registered ones; the next use loads again. For tests."""
    with _lock:
        _hosts.clear()
        _extra.clear()
