"""Streams and events of ``torch.neuron``: handles that keep CUDA's API shape, with nothing to order.

The emulated device runs every op at once, in the calling thread, so a stream orders nothing
and every recorded event is complete: waiting, querying and synchronizing return at once.
What is kept is what code reads off them: a stream's device and ids (FSDP2 passes them to
its own ops), the current stream per device (:func:`set_stream`, :func:`stream`), one default
stream per device, and an event's time (:meth:`Event.elapsed_time`). ``torch.neuron``
(:mod:`.device_module`) exposes these names.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import torch

from . import devices

_DeviceLike = int | str | torch.device | None
_index = devices.index_of

_PRIVATEUSE1 = int(torch._C._autograd.DeviceType.PrivateUse1)
_stream_ids = itertools.count(1)  # 0 is c10's id of a device's default stream


class Stream(torch.Stream):
    """A stream handle. Execution is synchronous, so waiting and recording do nothing.

    A ``torch.Stream`` (as ``torch.cuda.Stream`` and every in-tree device's stream are), so the
    APIs that take one accept it: ``Tensor.record_stream(stream)`` (FSDP calls it on every
    unsharded parameter), ``torch.ops.fsdp.record_grad_output_stream``. Its ``device_type`` is
    c10's PrivateUse1 number and each stream gets an id of its own.
    """

    def __new__(cls, device: _DeviceLike = None, priority: int = 0, **kwargs: Any) -> Stream:
        return super().__new__(cls, stream_id=next(_stream_ids), device_index=_index(device), device_type=_PRIVATEUSE1)

    def __init__(self, device: _DeviceLike = None, priority: int = 0, **kwargs: Any) -> None:
        self.priority = priority

    @property
    def device(self) -> torch.device:
        return devices.DEVICES[self.device_index]

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: Event) -> None:
        return None

    def wait_stream(self, stream: Stream) -> None:
        return None

    def record_event(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other is self

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<torch.neuron.Stream device=neuron:{self.device_index} (emulated, synchronous) at {id(self):#x}>"


class Event:
    """An event handle; with synchronous execution every recorded event is complete."""

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        import time

        self._time = time.perf_counter()

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and `end_event` (both must be recorded)."""
        if self._time is None or end_event._time is None:
            raise RuntimeError("both events must be recorded before elapsed_time()")
        return (end_event._time - self._time) * 1000.0


_default_streams: dict[int, Stream] = {}
_current_streams: dict[int, Stream] = {}


def default_stream(device: _DeviceLike = None) -> Stream:
    """The default stream of `device` (default: the current device)."""
    index = _index(device)
    s = _default_streams.get(index)
    if s is None:
        s = _default_streams[index] = Stream(index)
    return s


def current_stream(device: _DeviceLike = None) -> Stream:
    """The stream set by :func:`set_stream` on `device` (its default stream otherwise)."""
    index = _index(device)
    s = _current_streams.get(index)
    return s if s is not None else default_stream(index)


def set_stream(stream: Stream) -> None:
    """Make `stream` current on its device."""
    if not isinstance(stream, Stream):
        raise TypeError(f"expected a torch.neuron.Stream, got {type(stream).__name__}")
    _current_streams[stream.device_index] = stream


@contextlib.contextmanager
def stream(stream: Stream | None):
    """Context manager that makes `stream` current (and its device, as ``torch.cuda.stream``) for its body."""
    if stream is None:
        yield
        return
    prev_device = devices.current()
    devices.set_current(devices.check(stream.device_index))
    try:
        prev = current_stream(stream.device_index)
        set_stream(stream)
        try:
            yield
        finally:
            set_stream(prev)
    finally:
        devices.set_current(prev_device)


def wait_stream(stream: Stream) -> None:
    """Make the current stream wait for `stream`: a no-op under synchronous execution."""
    return None
