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
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal

import pluggy

from . import commands, hookspecs
from .errors import ConfigError, PluginError, did_you_mean
from .registry import BackendRegistry, BackendSpec

__all__ = ["PluginHost", "PluginRecord", "get_host", "get_plugin_manager", "register_plugin", "reset"]

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


class PluginHost:
    """A pluggy manager with the plugins loaded and their backends registered."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.pm.register(commands, name=commands.BUILTIN_PLUGIN_NAME)  # built-in subcommands, same hook
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

    def _register(self, record: PluginRecord, obj: Any) -> None:
        try:
            self.pm.register(obj, name=record.name)
        except Exception as exc:  # e.g. a hookimpl with a misspelled hook name
            self._fail(record, f"registration failed: {type(exc).__name__}: {exc}")

    def _fail(self, record: PluginRecord, message: str) -> None:
        record.status = "failed"
        record.error = message
        record.traceback = traceback.format_exc()
        warnings.warn(
            f"accel-abstraction plugin {record.name!r} ({record.distribution or 'unknown distribution'}) "
            f"was not loaded: {message}. Run `accel info --tracebacks` for the traceback.",
            RuntimeWarning,
            stacklevel=4,
        )

    def _register_backends(self) -> None:
        """Call each plugin's ``accel_register_backends`` separately, so one failure stays local."""
        for impl in self.pm.hook.accel_register_backends.get_hookimpls():
            record = self.records[self.pm.get_name(impl.plugin) or ""]
            added: list[BackendSpec] = []
            try:
                impl.function(*[{"register": added.append}[arg] for arg in impl.argnames])
            except Exception as exc:  # isolate the plugin; its traceback goes to `accel info`
                self._fail(record, f"accel_register_backends raised {type(exc).__name__}: {exc}")
                self.pm.unregister(impl.plugin)
                continue
            for spec in added:
                if not isinstance(spec, BackendSpec):
                    raise PluginError(
                        f"plugin {record.name!r} ({record.distribution}) registered {spec!r}; "
                        f"register() takes an accel_abstraction.BackendSpec"
                    )
                self.registry.add(spec, record.name, record.distribution)
                record.backends.append(spec.name)


def _discover() -> list[EntryPoint]:
    seen: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        seen.setdefault(ep.name, ep)  # the same distribution found twice on sys.path
    return sorted(seen.values(), key=lambda ep: ep.name)


def _allow_list() -> list[str] | None:
    raw = os.environ.get("ACCEL_PLUGINS")
    if raw is None or not raw.strip():
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]


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


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide pluggy manager (for calling extension hooks such as ``accel_scan_rules``)."""
    return get_host().pm


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
