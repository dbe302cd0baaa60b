"""Plugin loading: entry points of the group ``accel_abstraction``, isolated from each other.

Built-in backends (cpu, cuda, neuron) are distributions of their own and load through this
same path, exactly like a third-party plugin.

Environment:

* ``ACCEL_PLUGINS=cpu,neuron``: allow-list of plugin (entry-point) or distribution names;
  anything else installed is skipped. Naming a plugin that is not installed is an error.
* ``ACCEL_DISABLE_PLUGIN_AUTOLOAD=1``: load no entry point except those named in
  ``ACCEL_PLUGINS``; plugins registered in code with :func:`register_plugin` still load.

A plugin that raises while importing or while registering its backends is marked
``failed``: a warning names it, the others load, and ``accel info`` shows its traceback.
"""

from __future__ import annotations

import os
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal

import pluggy

from . import hookspecs
from .errors import ConfigError, PluginError, did_you_mean
from .registry import BackendRegistry, BackendSpec

__all__ = ["HookCall", "PluginHost", "PluginRecord", "get_host", "register_plugin", "reset"]

ENTRY_POINT_GROUP = "accel_abstraction"
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
        eps = _discover()
        if allow is not None:
            available = {ep.name for ep in eps} | {_dist_name(ep) for ep in eps}
            for wanted in allow:
                if wanted not in available:
                    raise ConfigError(
                        f"ACCEL_PLUGINS names {wanted!r}, which is not installed; installed plugins: "
                        f"{', '.join(sorted(ep.name for ep in eps)) or 'none'}.{did_you_mean(wanted, available)}"
                    )
        for ep in eps:
            dist = _dist_name(ep)
            record = PluginRecord(ep.name, dist, _dist_version(ep))
            self.records[ep.name] = record
            named = allow is not None and (ep.name in allow or dist in allow)
            if (allow is not None and not named) or (not autoload and not named):
                record.status = "skipped"
                record.error = "not in ACCEL_PLUGINS" if allow is not None else "ACCEL_DISABLE_PLUGIN_AUTOLOAD=1"
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not take the others down
                self._fail(record, f"import failed: {type(exc).__name__}: {exc}")
                continue
            self._register(record, module)
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
            record.traceback = "".join(traceback.format_exception(error)) if error is not None else traceback.format_exc()
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
        backends of every other plugin stay usable.
        """
        for call in self.call_each("accel_register_backends"):
            record = self.records[call.plugin]
            problem = (
                f"accel_register_backends raised {type(call.error).__name__}: {call.error}"
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

        Plugins are called in load order (entry points by name, then those registered in code),
        so where two claim the same thing the first loaded keeps it. A hook with a ``register``
        argument gets a fresh one per plugin, collecting into :attr:`HookCall.items`; ``kwargs``
        are the hook's other arguments. An exception is caught into :attr:`HookCall.error` with
        its traceback, never raised: each caller decides what it costs the plugin. A generator:
        stopping early (an error the caller re-raises) calls no further plugin, as pluggy would.
        """
        hook = getattr(self.pm.hook, hook_name, None)
        if hook is None:
            return
        for impl in hook.get_hookimpls():
            if impl.hookwrapper or impl.wrapper:
                continue  # wrappers wrap a call through pluggy, which plugin-by-plugin calling has not
            call = HookCall(self.pm.get_name(impl.plugin) or "")
            available = {**kwargs, "register": call.items.append}
            try:
                call.value = impl.function(*[available[arg] for arg in impl.argnames])
            except Exception as exc:  # the caller decides: drop the plugin's part, show it, re-raise
                call.error = exc
            yield call

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
                message = f"{hook_name} {what}: {type(error).__name__}: {error}"
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
    error: Exception | None = None
    """What it raised (its ``__traceback__`` says where)."""


def _discover() -> list[EntryPoint]:
    seen: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        seen.setdefault(ep.name, ep)  # the same distribution found twice on sys.path
    return sorted(seen.values(), key=lambda ep: ep.name)


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
