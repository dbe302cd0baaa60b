"""Per-step metrics from a training script: ``accel.log_metric(step=i, loss=..., step_time=...)``.

When the environment variable ``ACCEL_METRICS_FILE`` names a path (``accel parity`` sets it
for each run), every call appends one JSON object per line to that file::

    {"step": 3, "loss": 2.8133, "step_time": 0.0121}

The file is opened once, on the first call, and each line is flushed so a reader can follow
it while the script runs. Without the variable a call returns at once and writes nothing.
Values may be Python numbers or one-element tensors (read with ``.item()``, which waits for
the device); floats are written with ``repr`` precision, so a reader gets the exact value back
(NaN and infinities as ``NaN`` / ``Infinity``, which Python's ``json`` reads back).

Two more kinds of line, neither with a ``"step"``:

* ``{"run": {...}}``, written once when the file is opened: what this process runs on
  (backend, device name, torch and accel versions, default dtype, the backend's AMP dtype),
  so a recorded run says where it came from. :func:`write_run_facts` writes it on demand.
* ``{"settings": {...}}``, written by :func:`log_settings`: what the script declares about
  itself (seed, AMP dtype, number of steps, ...). ``accel parity`` compares these between a
  recorded reference and a new run, and a run that logs fewer steps than its declared
  ``steps`` is reported as stopped early.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import platform
from collections.abc import Callable
from typing import IO, Any

from .environment import read
from .errors import AccelError

__all__ = ["ENV_VAR", "MetricsFileError", "add_step_listener", "close", "log_metric", "log_settings", "run_facts", "write_run_facts"]

ENV_VAR = "ACCEL_METRICS_FILE"

class MetricsFileError(AccelError, OSError):
    """``$ACCEL_METRICS_FILE`` cannot be opened or written (a folder, a full disk, no permission)."""


_UNSET: Any = object()
_sink: IO[str] | None = _UNSET
_listeners: list[Callable[[int], None]] = []  # told each step once it is written (accel parity --locate)


def run_facts() -> dict[str, Any]:
    """What this process computes on: backend, device name, versions, default and AMP dtypes.

    Resolves the configured backend (a script that logs metrics uses it anyway). A backend
    that cannot be resolved or named is recorded as ``"error"``, never raised: facts describe
    a run, they must not stop it (a plugin's own exception types included, hence the broad catch).
    """
    import torch

    from . import __version__

    facts: dict[str, Any] = {
        "torch": torch.__version__,
        "accel": __version__,
        "python": platform.python_version(),
        "default_dtype": str(torch.get_default_dtype()).removeprefix("torch."),
    }
    try:
        from .runtime import current

        backend = current()
        facts["backend"] = backend.name
        facts["device_name"] = backend.device_name()
        facts["amp_dtype"] = str(backend.default_amp_dtype).removeprefix("torch.")
    except Exception as exc:  # recorded, not swallowed: see the docstring
        facts["error"] = f"{type(exc).__name__}: {exc}"
    return facts


def _open() -> IO[str] | None:
    global _sink
    path = read(ENV_VAR)
    if not path:
        _sink = None
        return None
    try:
        _sink = open(path, "a", buffering=1, encoding="utf-8")  # line-buffered: one flush per record
    except OSError as exc:
        _sink = _UNSET
        raise _failure(path, exc) from None
    atexit.register(close)
    _write(json.dumps({"run": run_facts()}))
    return _sink


def _failure(path: str, exc: OSError) -> MetricsFileError:
    reason = "no space left on the device" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
    return MetricsFileError(
        f"{ENV_VAR}={path!r}: cannot write the metrics ({reason}); point it at a writable file, or unset it"
    )


def _write(line: str) -> None:
    """Append one record; a sink that cannot take it is one :class:`MetricsFileError` (and closed)."""
    sink = _sink
    assert sink is not None and sink is not _UNSET
    try:
        sink.write(line + "\n")
    except OSError as exc:
        close()
        raise _failure(getattr(sink, "name", read(ENV_VAR) or ""), exc) from None


def _sink_or_none() -> IO[str] | None:
    return _sink if _sink is not _UNSET else _open()


def _plain(name: str, value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    item = getattr(value, "item", None)
    if item is not None:
        return item()
    raise TypeError(
        f"log_metric({name}=...) takes numbers, strings or one-element tensors, not {type(value).__name__}"
    )


def log_metric(step: int, **values: Any) -> None:
    """Record ``values`` (``loss=``, ``step_time=``, ...) for training step ``step``.

    Appends ``{"step": step, **values}`` as a JSON line to ``$ACCEL_METRICS_FILE``; does
    nothing when that variable is unset or empty (checked once per process).
    """
    sink = _sink_or_none()
    if sink is None:
        return
    record = {"step": int(step)}
    record.update({name: _plain(name, value) for name, value in values.items()})
    _write(json.dumps(record))
    if _listeners:
        for listener in _listeners:
            listener(record["step"])


def add_step_listener(listener: Callable[[int], None]) -> None:
    """Call ``listener(step)`` after each :func:`log_metric` record is written (``accel parity
    --locate`` counts steps with it). A listener may raise ``SystemExit`` to end the run there."""
    _listeners.append(listener)


def log_settings(**settings: Any) -> None:
    """Declare the run's settings: ``accel.log_settings(seed=0, steps=80, amp_dtype="bfloat16")``.

    Numbers, strings, booleans, ``None`` or a ``torch.dtype`` (written as its name, e.g.
    ``"bfloat16"``). Later calls add to (and override) earlier ones. A no-op without
    ``$ACCEL_METRICS_FILE``, like :func:`log_metric`.
    """
    sink = _sink_or_none()
    if sink is None:
        return
    plain = {}
    for name, value in settings.items():
        if type(value).__name__ == "dtype" and type(value).__module__ == "torch":
            value = str(value).removeprefix("torch.")
        elif not (isinstance(value, (bool, int, float, str)) or value is None):
            raise TypeError(
                f"log_settings({name}=...) takes numbers, strings, booleans, None or a torch.dtype, "
                f"not {type(value).__name__}"
            )
        plain[name] = value
    _write(json.dumps({"settings": plain}))


def write_run_facts() -> None:
    """Make sure the ``{"run": ...}`` line is written (``accel parity --redirect`` calls it for scripts that log nothing)."""
    _sink_or_none()  # opening the file writes the facts; an open file has them already


def close() -> None:
    """Close the metrics file; the next :func:`log_metric` reads ``ACCEL_METRICS_FILE`` again."""
    global _sink
    sink, _sink = _sink, _UNSET
    if sink is not _UNSET and sink is not None:
        with contextlib.suppress(OSError):  # what was not written was said by the write that failed
            sink.close()
