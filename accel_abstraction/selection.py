"""Choosing the backend from the settings: ``auto`` by priority, a name strictly, fallback on request."""

from __future__ import annotations

import traceback
import warnings
from dataclasses import dataclass

from .errors import BackendUnavailableError, PluginError
from .interface import Backend
from .registry import BackendRegistry, RegisteredBackend
from .sections import CoreSettings

__all__ = ["Selection", "build_backend", "select_backend"]


@dataclass(frozen=True)
class Selection:
    """The outcome of selection: the backend and why it was chosen."""

    backend: Backend
    entry: RegisteredBackend
    requested: str
    source: str
    fell_back_from: str | None = None
    fallback_reason: str = ""


def build_backend(entry: RegisteredBackend, settings: CoreSettings | None) -> Backend:
    """Call the entry's factory; a factory that raises becomes a :class:`PluginError` naming its origin."""
    try:
        return entry.spec.factory(settings)
    except Exception as exc:  # the plugin's bug, reported with its origin
        raise PluginError(
            f"the factory of backend {entry.spec.name!r} from {entry.origin} raised "
            f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        ) from exc


def _pick_auto(registry: BackendRegistry, settings: CoreSettings) -> tuple[Backend, RegisteredBackend]:
    reasons = []
    for entry in registry.by_priority():
        try:
            backend = build_backend(entry, settings)
        except PluginError as exc:
            warnings.warn(str(exc).splitlines()[0] + "; skipped by backend='auto'", RuntimeWarning, stacklevel=4)
            reasons.append(f"{entry.spec.name}: factory raised")
            continue
        avail = backend.availability()
        if avail.available:
            return backend, entry
        reasons.append(f"{entry.spec.name}: {avail.reason}")
    raise BackendUnavailableError(
        "auto",
        "no registered backend is available (" + "; ".join(reasons or ["no backend is registered"]) + ")",
        hint="install accel-cpu (pip install -e plugins/cpu), which is always available",
    )


def select_backend(registry: BackendRegistry, settings: CoreSettings) -> Selection:
    """Resolve ``settings.backend`` against ``registry``.

    ``"auto"``: the available backend with the highest priority. A name: that backend,
    or :class:`BackendUnavailableError` with the plugin's reason and fix, unless
    ``settings.fallback`` names another backend (or ``"auto"``), which is then used with a
    ``RuntimeWarning``.
    """
    source = str(settings.source_of("backend"))
    if settings.backend == "auto":
        backend, entry = _pick_auto(registry, settings)
        return Selection(backend, entry, "auto", source)
    entry = registry.get(settings.backend, source)
    backend = build_backend(entry, settings)
    avail = backend.availability()
    if avail.available:
        return Selection(backend, entry, settings.backend, source)
    if settings.fallback is None:
        raise BackendUnavailableError(
            entry.spec.name,
            avail.reason,
            source,
            hint=avail.hint or "set ACCEL_FALLBACK=cpu (or fallback in [tool.accel]) to fall back instead",
        )
    fb_source = str(settings.source_of("fallback"))
    if settings.fallback == "auto":
        fb_backend, fb_entry = _pick_auto(registry, settings)
    else:
        fb_entry = registry.get(settings.fallback, fb_source)
        fb_backend = build_backend(fb_entry, settings)
        fb_avail = fb_backend.availability()
        if not fb_avail.available:
            raise BackendUnavailableError(fb_entry.spec.name, fb_avail.reason, fb_source, hint=fb_avail.hint)
    warnings.warn(
        f"backend {entry.spec.name!r} is not available ({avail.reason}); falling back to "
        f"{fb_entry.spec.name!r} as {fb_source} says",
        RuntimeWarning,
        stacklevel=4,
    )
    return Selection(fb_backend, fb_entry, settings.backend, source, entry.spec.name, avail.reason)
