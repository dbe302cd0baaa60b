"""The table of backends that plugins registered, and name resolution against it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import PluginError, UnknownBackendError

if TYPE_CHECKING:
    from .interface import Backend
    from .sections import CoreSettings

__all__ = ["BackendSpec", "BackendRegistry", "RegisteredBackend"]


@dataclass(frozen=True)
class BackendSpec:
    """A backend offered by a plugin through ``accel_register_backends(register)``.

    ``factory`` builds the backend from the settings (usually the ``Backend`` subclass
    itself); it must be cheap and must not touch a device. ``priority`` orders backends
    for ``backend="auto"`` (higher wins among the available ones): it is the one source of
    truth for that order. ``aliases`` are extra names accepted in configuration.
    """

    name: str
    factory: Callable[[CoreSettings | None], Backend]
    priority: int = 0
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class RegisteredBackend:
    """A :class:`BackendSpec` with the plugin and distribution that registered it."""

    spec: BackendSpec
    plugin: str
    distribution: str = field(default="")

    @property
    def origin(self) -> str:
        return f"{self.distribution or 'unknown distribution'} (plugin {self.plugin!r})"


class BackendRegistry:
    """Backends by name. Names and aliases are unique across all plugins."""

    def __init__(self) -> None:
        self._by_name: dict[str, RegisteredBackend] = {}
        self._aliases: dict[str, str] = {}
        #: Why no backend is registered, when the loader knows (an environment variable skipped
        #: every plugin); said by the "no backend" error.
        self.empty_reason = ""

    def check_specs(self, origin: str, specs: list[Any]) -> str:
        """Why ``specs`` (from ``origin``, a plugin) cannot be registered as a whole (``""``: they can)."""
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
                problem = self.clash(key, origin)
                if problem:
                    return problem
        return ""

    def clash(self, key: str, origin: str) -> str:
        """Why ``origin`` (``plugin 'x' (dist)``) cannot take the backend name or alias ``key``
        (``""``: it is free). The one "registered twice" check, for the plugin host and :meth:`add`."""
        key = key.lower()
        owner = self._by_name.get(key) or self._by_name.get(self._aliases.get(key, ""))
        if owner is None:
            return ""
        return (
            f"backend name {key!r} is registered twice: by {owner.origin} and by {origin}; "
            f"uninstall one of them, or load only one with ACCEL_PLUGINS"
        )

    def add(self, spec: BackendSpec, plugin: str, distribution: str = "") -> None:
        """Register ``spec``. Raises :class:`PluginError` if a name or alias is taken."""
        entry = RegisteredBackend(spec, plugin, distribution)
        for key in (spec.name, *spec.aliases):
            problem = self.clash(key, f"plugin {plugin!r} ({distribution or 'unknown distribution'})")
            if problem:
                raise PluginError(problem)
        self._by_name[spec.name.lower()] = entry
        for alias in spec.aliases:
            self._aliases[alias.lower()] = spec.name.lower()

    def get(self, name: str, source: str = "") -> RegisteredBackend:
        """The entry for ``name`` or an alias; :class:`UnknownBackendError` lists the known names."""
        key = name.lower()
        entry = self._by_name.get(key) or self._by_name.get(self._aliases.get(key, ""))
        if entry is None:
            raise UnknownBackendError(name, self.names(), source)
        return entry

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def by_priority(self) -> list[RegisteredBackend]:
        """Entries, highest priority first (ties broken by name for a stable order)."""
        return sorted(self._by_name.values(), key=lambda e: (-e.spec.priority, e.spec.name))

    def __iter__(self) -> Iterator[RegisteredBackend]:
        return iter(self.by_priority())

    def __len__(self) -> int:
        return len(self._by_name)
