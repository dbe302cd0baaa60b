"""Choosing the backend from the settings: ``auto`` by priority, a name strictly, fallback on request."""

from __future__ import annotations

import contextlib
import io
import sys
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import AccelError, BackendUnavailableError, PluginError, headline
from .features import Availability
from .interface import Backend
from .registry import BackendRegistry, RegisteredBackend
from .sections import CoreSettings

__all__ = ["Selection", "build_backend", "probe", "select_backend"]


@dataclass(frozen=True)
class Selection:
    """The outcome of selection: the backend and why it was chosen."""

    backend: Backend
    entry: RegisteredBackend
    requested: str
    source: str
    fell_back_from: str | None = None
    fallback_reason: str = ""


@contextlib.contextmanager
def _plugin_stdout(entry: RegisteredBackend, what: str) -> Iterator[None]:
    """Run a plugin's backend code with its stdout moved to stderr, one labelled block, so that
    ``accel info --json``, ``accel scan --format json`` and ``accel run --report json`` stay
    valid whatever a factory or an availability probe prints."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield
    finally:
        if text := buffer.getvalue():
            sys.stderr.write(f"[output of {what} of backend {entry.spec.name!r} from {entry.origin}]\n{text}")
            if not text.endswith("\n"):
                sys.stderr.write("\n")


def build_backend(entry: RegisteredBackend, settings: CoreSettings | None) -> Backend:
    """Call the entry's factory; a factory that raises becomes a :class:`PluginError` naming its origin.

    An :class:`AccelError` the factory raises on purpose (a :class:`ConfigError` for a bad
    ``ACCEL_NEURON_*`` value, say) already says what and where: it propagates unchanged.
    """
    try:
        with _plugin_stdout(entry, "the factory"):
            return entry.spec.factory(settings)
    except AccelError:
        raise
    except Exception as exc:  # the plugin's bug, reported with its origin
        raise PluginError(
            f"the factory of backend {entry.spec.name!r} from {entry.origin} raised "
            f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        ) from exc


def probe(backend: Backend, entry: RegisteredBackend) -> Availability:
    """``backend.availability()``, with a probe that raises reported as unavailable, naming the plugin.

    Availability probes are isolated like plugin imports: one backend whose probe raises
    (a driver library missing, an ``OSError`` from a device node) never takes down
    ``backend="auto"``, ``accel info`` or the selection of another backend.
    """
    try:
        with _plugin_stdout(entry, "availability()"):
            avail = backend.availability()
    except Exception as exc:  # the plugin's bug or a broken driver: this backend only is unusable
        return Availability.no(
            f"availability() of backend {entry.spec.name!r} from {entry.origin} raised {type(exc).__name__}: {exc}",
            hint="report it to the plugin's authors; select another backend meanwhile (ACCEL_BACKEND)",
            traceback=traceback.format_exc(),
        )
    if not isinstance(avail, Availability):
        return Availability.no(
            f"availability() of backend {entry.spec.name!r} from {entry.origin} returned {avail!r}, "
            "not an accel_abstraction.Availability"
        )
    return avail


def _pick_auto(registry: BackendRegistry, settings: CoreSettings) -> tuple[Backend, RegisteredBackend]:
    reasons = []
    for entry in registry.by_priority():
        try:
            backend = build_backend(entry, settings)
        except PluginError as exc:
            warnings.warn(headline(exc) + "; skipped by backend='auto'", RuntimeWarning, stacklevel=4)
            reasons.append(f"{entry.spec.name}: factory raised")
            continue
        avail = probe(backend, entry)
        if avail.available:
            return backend, entry
        if avail.traceback is not None:
            warnings.warn(avail.reason + "; skipped by backend='auto'", RuntimeWarning, stacklevel=4)
        reasons.append(f"{entry.spec.name}: {avail.reason}")
    raise BackendUnavailableError(
        "auto",
        "no registered backend is available (" + "; ".join(reasons or [registry.empty_reason or "no backend is registered"]) + ")",
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
    avail = probe(backend, entry)
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
        fb_avail = probe(fb_backend, fb_entry)
        if not fb_avail.available:
            raise BackendUnavailableError(fb_entry.spec.name, fb_avail.reason, fb_source, hint=fb_avail.hint)
    warnings.warn(
        f"backend {entry.spec.name!r} is not available ({avail.reason}); falling back to "
        f"{fb_entry.spec.name!r} as {fb_source} says",
        RuntimeWarning,
        stacklevel=4,
    )
    return Selection(fb_backend, fb_entry, settings.backend, source, entry.spec.name, avail.reason)
