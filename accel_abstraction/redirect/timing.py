"""``torch.cuda.Event(enable_timing=True)`` on a backend without events: host-timed events.

Scripts time steps with two CUDA events (``start.record(); ...; end.record();
torch.cuda.synchronize(); start.elapsed_time(end)``). On a backend whose
``capabilities()`` declares no events (cpu), :class:`HostEvent` serves the same protocol:
``record()`` waits for the backend's queued work (``backend.synchronize()``) and reads the
host's monotonic clock, so ``elapsed_time`` is the wall time in milliseconds between the
two records. ``query()`` is always True and ``synchronize()``/``wait()`` have nothing to
wait for: the work was finished when the event was recorded.
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import AccelError
from ..interface import Backend

__all__ = ["host_event_class"]


def host_event_class(backend: Backend) -> type:
    """A ``torch.cuda.Event``-like class timed on the host for ``backend``."""

    class HostEvent:
        __doc__ = f"torch.cuda.Event served on backend {backend.name!r} by the host clock (see accel_abstraction.redirect.timing)."
        __module__ = "torch.cuda"

        def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
            self.enable_timing = enable_timing
            self._ns: int | None = None

        def record(self, stream: Any = None) -> None:
            backend.synchronize()
            self._ns = time.perf_counter_ns()

        def query(self) -> bool:
            return True

        def synchronize(self) -> None:
            """Nothing to wait for: :meth:`record` waited for the backend's work."""

        def wait(self, stream: Any = None) -> None:
            """Nothing to wait for: :meth:`record` waited for the backend's work."""

        def elapsed_time(self, end_event: Any) -> float:
            """Milliseconds between this event's record and ``end_event``'s."""
            if not (self.enable_timing and getattr(end_event, "enable_timing", False)):
                raise AccelError("elapsed_time needs both events created with torch.cuda.Event(enable_timing=True)")
            if self._ns is None or end_event._ns is None:
                raise AccelError("elapsed_time needs both events recorded (event.record()) first")
            return (end_event._ns - self._ns) / 1e6

    HostEvent.__name__ = HostEvent.__qualname__ = "Event"
    return HostEvent
