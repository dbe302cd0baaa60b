"""The emulation rule: when a backend named for a test or a comparison runs emulated.

One rule for every tool that runs code on several backends to compare them: the pytest
plugin (``--accel-backend``), ``accel parity`` (``--backends`` and its default list),
``assert_backends_match`` and ``accel test``:

* a backend that runs here as configured runs as it is;
* a backend that cannot, but whose plugin offers an emulation (by convention it reads
  ``ACCEL_<NAME>_EMULATE=1``; :func:`emulation_var`), runs emulated, with that variable set
  for its process or test only, and the tools say so (``accel parity`` marks it ``*``);
* the user's own word wins: with ``ACCEL_<NAME>_EMULATE`` already set (``=0`` to insist on
  the hardware) nothing is changed;
* a backend that runs neither way is skipped (pytest) or refused (the others) with
  :func:`unavailable_message`: the same words, the plugin's reason and its hint, everywhere.

Selecting a backend for a program (``ACCEL_BACKEND=<name> python train.py``,
``accel.use(name)``) never turns an emulation on by itself: a training job that silently
ran on a CPU emulation instead of the hardware would be a wrong answer, not a convenience.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

from .errors import BackendUnavailableError
from .features import Availability

__all__ = ["backend_env", "emulated_if_needed", "emulation_var", "runnable_backends", "unavailable_message"]


def emulation_var(name: str) -> str:
    """The variable by which a plugin offers an emulation of backend ``name``: ``ACCEL_<NAME>_EMULATE``."""
    return f"ACCEL_{name.upper().replace('-', '_')}_EMULATE"


def unavailable_message(name: str, reason: str, hint: str = "") -> str:
    """The one sentence every tool gives for a backend that runs neither as configured nor emulated."""
    return str(BackendUnavailableError(name, reason, hint=hint))


@contextlib.contextmanager
def _patched_environ(changes: Mapping[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _availability(name: str, changes: Mapping[str, str], source: str) -> Availability:
    """Whether backend ``name`` could run in a process whose environment has ``changes`` applied."""
    from .plugins import get_host
    from .sections import CORE
    from .selection import build_backend, probe

    with _patched_environ(changes):
        entry = get_host().registry.get(name, source)
        backend = build_backend(entry, CORE.load(backend=name))
        return probe(backend, entry)  # a probe that raises is "unavailable", naming the plugin


def _rule(name: str, source: str) -> tuple[dict[str, str], BackendUnavailableError | None]:
    changes = {"ACCEL_BACKEND": name}
    avail = _availability(name, changes, source)
    if avail.available:
        return changes, None
    var = emulation_var(name)
    if var not in os.environ:
        emulated = {**changes, var: "1"}
        if _availability(name, emulated, source).available:
            return emulated, None
    return changes, BackendUnavailableError(name, avail.reason, hint=avail.hint)


def backend_env(name: str, source: str = "--backends") -> tuple[dict[str, str], str]:
    """The environment changes that run backend ``name`` in a fresh process, and why not ("" if it can).

    ``ACCEL_BACKEND=name``; plus ``ACCEL_<NAME>_EMULATE=1`` when the backend is not available
    as configured but becomes available with it and the user has not set that variable. The
    "why not" is :func:`unavailable_message`'s sentence. Raises
    :class:`~accel_abstraction.errors.UnknownBackendError` for a name no plugin registers
    (naming ``source``, the option the name came from).
    """
    changes, refusal = _rule(name, source)
    return changes, "" if refusal is None else str(refusal)


@contextlib.contextmanager
def emulated_if_needed(name: str, source: str = "") -> Iterator[BackendUnavailableError | None]:
    """Run the block with backend ``name`` runnable in this process under the rule, if it can be.

    Sets the emulation variable the rule asks for (restored on exit) and yields ``None``; or
    yields the :class:`~accel_abstraction.errors.BackendUnavailableError` to skip with or raise
    when the backend runs neither way (its text is :func:`unavailable_message`'s).
    """
    changes, refusal = _rule(name, source)
    changes.pop("ACCEL_BACKEND")  # the caller selects the backend itself (accel.using)
    with _patched_environ(changes):
        yield refusal


def runnable_backends() -> list[str]:
    """Registered backends that run here under the rule (as configured, or emulated), the host CPU first."""
    import warnings

    from .errors import PluginError
    from .plugins import get_host

    names = []
    for entry in get_host().registry.by_priority():
        name = entry.spec.name
        try:
            _, why_not = backend_env(name)
        except PluginError as exc:  # a broken factory leaves the default list, it does not stop it
            warnings.warn(f"skipping backend {name!r}: its factory raised {exc!r}", RuntimeWarning, stacklevel=2)
            continue
        if not why_not:
            names.append(name)
    return names[::-1]
