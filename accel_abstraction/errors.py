"""The exception hierarchy of accel-abstraction.

Every error raised on purpose by the library derives from :class:`AccelError`, so a
caller can catch one type. Messages say what was wrong, where the bad value came from
(environment variable, file and line, keyword argument) and what to do about it. The
``accel`` CLI prints ``str(error)`` on one line; ``--traceback`` shows the rest.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AccelError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "BackendUnavailableError",
    "CapabilityError",
    "ConfigError",
    "DeviceIndexError",
    "MissingDependencyError",
    "PluginError",
    "UnknownBackendError",
    "PLUGIN_ATTR",
    "decode_utf8",
    "did_you_mean",
    "headline",
]


#: Attribute set on an exception that a plugin's hook raised through the library (the
#: plugin's name): it propagates unchanged, and a CLI prints one line naming the plugin.
PLUGIN_ATTR = "accel_plugin"


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """Return ``" Did you mean 'x'?"`` for the closest of ``choices``, or ``""``."""
    import difflib  # only on the error path: keeps `import accel_abstraction` light

    close = difflib.get_close_matches(value.lower(), [c.lower() for c in choices], n=1, cutoff=0.5)
    return f" Did you mean '{close[0]}'?" if close else ""


def headline(exc: BaseException) -> str:
    """The first non-blank line of ``exc``'s message, stripped; its type's name when the message is blank.

    What a one-line report (the CLI's ``accel: error: ...``, a warning, a JSON field) shows of an
    error whose message may span lines, be empty (``RuntimeError()``) or be only white space.
    """
    for line in str(exc).splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__


class AccelError(Exception):
    """Base class of every error accel-abstraction raises on purpose."""


def decode_utf8(data: bytes, path: object, fix: str, error: type[AccelError]) -> str:
    """``data`` (the bytes of file ``path``) as UTF-8 text, or ``error`` naming the file, the line, the
    offending byte and its offset, followed by ``fix`` (what to do)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(
            f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}); {fix}"
        ) from None


class ArgumentTypeError(AccelError, TypeError):
    """A public function got an argument of the wrong type. The message says what it expected."""


class ArgumentValueError(AccelError, ValueError):
    """A public function got an argument of the right type but an unusable value (an autocast dtype the
    backend cannot use, say). The message lists the accepted values."""


class MissingDependencyError(AccelError, ImportError):
    """A package that this part of the library needs is not installed; the message says how to get it."""


class ConfigError(AccelError, ValueError):
    """A configuration value is invalid. The message names its source and the accepted values."""


class UnknownBackendError(ConfigError):
    """A backend name matches no registered backend."""

    def __init__(self, name: str, known: Iterable[str], source: str = "") -> None:
        known = sorted(known)
        where = f" (from {source})" if source else ""
        super().__init__(
            f"unknown backend {name!r}{where}; known backends: {', '.join(known) or 'none'}."
            f"{did_you_mean(name, known)}"
        )
        self.name = name
        self.known = known


class BackendUnavailableError(AccelError):
    """A backend was asked for by name but cannot run here. Carries the plugin's own reason."""

    def __init__(self, name: str, reason: str, source: str = "", hint: str = "") -> None:
        where = f" (asked for by {source})" if source else ""
        msg = f"backend {name!r} is not available{where}: {reason}"
        if hint:
            msg += f". To fix: {hint}"
        super().__init__(msg)
        self.name = name
        self.reason = reason


class CapabilityError(AccelError, NotImplementedError):
    """The selected backend does not support a feature. Never answered by a silent ``None``."""

    def __init__(self, backend: str, feature: str, reason: str = "") -> None:
        msg = f"backend {backend!r} does not support {feature}"
        msg += f": {reason}" if reason else "; check accel.capabilities() before using it."
        super().__init__(msg)
        self.backend = backend
        self.feature = feature
        self.reason = reason


class DeviceIndexError(AccelError, IndexError):
    """A device index is negative or not below the backend's device count."""


class PluginError(AccelError):
    """A plugin failed to load or register, or two plugins claim the same backend name."""
