"""Per-step metrics from a training script: ``accel.log_metric(step=i, loss=..., step_time=...)``.

When the environment variable ``ACCEL_METRICS_FILE`` names a path (``accel parity`` sets it
for each run), every call appends one JSON object per line to that file::

    {"step": 3, "loss": 2.8133, "step_time": 0.0121}

The file is opened once, on the first call, and each line is flushed so a reader can follow
it while the script runs. Without the variable a call returns at once and writes nothing.
Values may be Python numbers or one-element tensors (read with ``.item()``, which waits for
the device); floats are written with ``repr`` precision, so a reader gets the exact value back.
"""

from __future__ import annotations

import atexit
import json
import os
from typing import IO, Any

__all__ = ["ENV_VAR", "close", "log_metric"]

ENV_VAR = "ACCEL_METRICS_FILE"

_UNSET: Any = object()
_sink: IO[str] | None = _UNSET


def _open() -> IO[str] | None:
    global _sink
    path = os.environ.get(ENV_VAR)
    if not path:
        _sink = None
        return None
    _sink = open(path, "a", buffering=1, encoding="utf-8")  # line-buffered: one flush per record
    atexit.register(close)
    return _sink


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
    sink = _sink if _sink is not _UNSET else _open()
    if sink is None:
        return
    record = {"step": int(step)}
    record.update({name: _plain(name, value) for name, value in values.items()})
    sink.write(json.dumps(record) + "\n")


def close() -> None:
    """Close the metrics file; the next :func:`log_metric` reads ``ACCEL_METRICS_FILE`` again."""
    global _sink
    sink, _sink = _sink, _UNSET
    if sink is not _UNSET and sink is not None:
        sink.close()
