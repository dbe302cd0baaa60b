"""Finding plugins: the entry-point groups, which plugins a command needs, the import bound.

A plugin declares what it provides by the entry-point group it is listed in (its name, the
plugin's name, is the same in each):

* ``accel_abstraction.backends``: the module whose hooks provide backends and what goes with
  them (``accel_register_backends``, ``accel_backend_selected``, ``accel_env_info``,
  ``accel_op_support``, ``accel_redirects``). Imported only by commands and programs that use
  a backend.
* ``accel_abstraction.tools``: the module whose hooks the tools need (``accel_scan_rules``,
  ``accel_register_commands``, ``accel_config_sections``). Commands that need no backend
  (``accel scan``, ``accel port``, ``accel config``, ``accel patches``) import these only.
* ``accel_abstraction`` (the group before capabilities were declared): a plugin that
  declares nothing, treated as providing both; every command imports it, as before.

The two modules may be one (list it in both groups): it is then imported and registered once.
"""

from __future__ import annotations

import math
import signal
import threading
from dataclasses import dataclass
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, entry_points
from typing import Any, Literal

from .environment import read
from .errors import ConfigError

#: The undeclared (legacy) group: a plugin listed here only is loaded by every command.
ENTRY_POINT_GROUP = "accel_abstraction"
BACKENDS_GROUP = "accel_abstraction.backends"
TOOLS_GROUP = "accel_abstraction.tools"
#: Group in the ``accel-abstraction`` distribution's own metadata listing its built-in plugins
#: (``name = module``, as they appear in the groups above).
BUILTIN_GROUP = "accel_abstraction.builtin"
CORE_DISTRIBUTION = "accel-abstraction"
IMPORT_TIMEOUT_ENV = "ACCEL_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT_S = 10.0

#: What a plugin host is loaded for: ``"all"`` (backends and tools), ``"tools"`` (a command
#: that needs no backend).
Scope = Literal["all", "tools"]
#: The groups each scope reads, in the order a plugin's modules are loaded.
SCOPE_GROUPS: dict[str, tuple[str, ...]] = {
    "all": (BACKENDS_GROUP, TOOLS_GROUP, ENTRY_POINT_GROUP),
    "tools": (TOOLS_GROUP, ENTRY_POINT_GROUP),
}


@dataclass
class Found:
    """One plugin to load: its name, distribution and the entry points (one per module) of the scope."""

    name: str
    entry_points: list[EntryPoint]

    @property
    def first(self) -> EntryPoint:
        return self.entry_points[0]

    @property
    def legacy(self) -> bool:
        """Listed in the undeclared group only: declares no capability."""
        return all(ep.group == ENTRY_POINT_GROUP for ep in self.entry_points)


def discover(scope: Scope = "all") -> tuple[list[Found], list[tuple[EntryPoint, EntryPoint]]]:
    """The plugins to load for ``scope``, built-in ones first then by name; and each entry
    point dropped because another distribution offers its name, with the one kept.

    A plugin's entry points in the scope's groups are loaded in :data:`SCOPE_GROUPS` order,
    each module once (one listed in two groups is one module).
    """
    groups = SCOPE_GROUPS[scope]
    found = [ep for group in groups for ep in entry_points(group=group)]
    found.sort(key=lambda ep: not is_builtin(ep))  # stable: built-ins first, then group order
    plugins: dict[str, Found] = {}
    duplicates: list[tuple[EntryPoint, EntryPoint]] = []
    for ep in found:
        plugin = plugins.setdefault(ep.name, Found(ep.name, []))
        kept = plugin.first if plugin.entry_points else ep
        if dist_name(kept) != dist_name(ep):
            duplicates.append((ep, kept))
        elif all(other.value != ep.value for other in plugin.entry_points):  # same module twice: once
            plugin.entry_points.append(ep)
    ordered = sorted(plugins.values(), key=lambda p: (not is_builtin(p.first), p.name))
    return ordered, duplicates


def builtin_entry_points() -> frozenset[tuple[str, str]]:
    """``(name, module)`` of the built-in plugins, from the core distribution's metadata
    (empty when it is not installed: then no plugin is preferred)."""
    try:
        eps = distribution(CORE_DISTRIBUTION).entry_points
    except PackageNotFoundError:
        return frozenset()
    return frozenset((ep.name, ep.value) for ep in eps if ep.group == BUILTIN_GROUP)


_builtins: frozenset[tuple[str, str]] | None = None


def is_builtin(ep: EntryPoint) -> bool:
    """One of the project's own plugins (:data:`BUILTIN_GROUP`): wins a name clash."""
    global _builtins
    if _builtins is None:
        _builtins = builtin_entry_points()
    return (ep.name, ep.value) in _builtins


class ImportTooSlow(BaseException):
    """Raised into a plugin import that outlived :data:`IMPORT_TIMEOUT_ENV` (a BaseException:
    the plugin's own ``except Exception`` must not swallow it)."""


def import_timeout() -> float:
    """Seconds a plugin's import may take (:data:`IMPORT_TIMEOUT_ENV`; 0: no bound)."""
    raw = (read(IMPORT_TIMEOUT_ENV) or "").strip()
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


def bounded_load(ep: EntryPoint, bound: float) -> Any:
    """``ep.load()``, interrupted by :class:`ImportTooSlow` after ``bound`` seconds.

    The bound is a ``SIGALRM`` timer, so it holds only in the main thread and when no
    other timer is running (elsewhere the import is unbounded); the previous handler is
    put back. Only the plugin's own code is interrupted: while it is importing another
    package (torch, slow on a loaded machine), the alarm waits for that import to end, as
    a package interrupted half-way (torch's operator registrations made, its module
    dropped) could not be imported again in this process; once it has ended, the plugin's
    own code has the whole bound again.
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
    waited = [False]  # the last alarm came inside another package's import

    def expired(_signum: int, frame: Any) -> None:
        if _importing(frame) != own:
            waited[0] = True
            signal.setitimer(signal.ITIMER_REAL, 0.2)  # inside another package's import: ask again soon
        elif waited[0]:
            # that import ended within the last 0.2 s: the plugin's own code resumed just now and
            # gets the whole bound again (the other package's time is not the plugin's)
            waited[0] = False
            signal.setitimer(signal.ITIMER_REAL, bound)
        else:
            raise ImportTooSlow

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
    """The top-level package of the innermost module being imported where ``frame`` (or a caller) runs.

    That is the innermost module body (``<module>``), or, nearer still, the module the import
    system is finding, compiling or loading (``_find_and_load(name)``): between the plugin's
    ``import torch`` and the first line of torch's body, the time belongs to torch's import.
    """
    while frame is not None:
        code = frame.f_code
        if code.co_name == "<module>":
            return str(frame.f_globals.get("__name__", "")).split(".", 1)[0]
        if code.co_name == "_find_and_load" and code.co_filename.startswith("<frozen importlib"):
            name = frame.f_locals.get("name")
            if isinstance(name, str):
                return name.split(".", 1)[0]
        frame = frame.f_back
    return ""


def allow_list() -> list[str] | None:
    """The plugin names ``ACCEL_PLUGINS`` allows (None: all)."""
    raw = read("ACCEL_PLUGINS")
    if raw is None or not raw.strip():
        return None
    names = [part.strip() for part in raw.split(",") if part.strip()]
    if not names:
        raise ConfigError(
            f"ACCEL_PLUGINS={raw!r} names no plugin; list plugin names separated by commas "
            "(e.g. ACCEL_PLUGINS=cpu), or unset it to load every installed plugin"
        )
    return names


def dist_name(ep: EntryPoint) -> str:
    """The name of the distribution offering ``ep`` (``""``: unknown)."""
    return ep.dist.name if ep.dist is not None else ""


def dist_version(ep: EntryPoint) -> str:
    """The version of the distribution offering ``ep``."""
    return ep.dist.version if ep.dist is not None else ""
