"""Streams and events of ``torch.neuron``: CUDA's API shape, with nothing to order.

The emulated device runs every op at once, in the calling thread, so a stream orders
nothing and every recorded event is complete: waiting, querying and synchronizing return at once.
What is kept is what code reads off them, as one state for every API: the current stream per
device and thread lives in the emulator's C++ device guard (``csrc/device_guard.cpp``), which
``torch.Stream``, ``torch.accelerator.current_stream``/``set_stream``, ``with torch.Stream(...)``
and the autograd engine ask, and which this module reads and writes through the core's C entry
points. So a :class:`Stream` and ``torch.Stream(device="neuron")`` draw their ids from one counter
(two streams are never equal; a device's default stream is id 0), :func:`set_stream` is what
``torch.accelerator.current_stream()`` answers and the other way round, and the engine sees a
gradient accumulator made under one stream used under another (its AccumulateGrad
stream-mismatch warning, as on CUDA). Without the C++ core the state is kept here, per thread,
and PyTorch's C++ side sees only default streams. Events are one kind too: :class:`Event` makes
``torch.Event`` objects of the device, so ``torch.neuron.Event``, ``torch.Event(device="neuron")``,
``torch.Stream.record_event``/``wait_event`` and the engine's events are recorded, queried and
timed by the guard (host time of the last record), with CUDA's checks and errors.
``torch.neuron`` (:mod:`.device_module`) exposes these names, and ``accel.Stream``, ``accel.Event``,
``accel.stream`` and ``accel.current_stream`` reach them through the neuron backend.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import weakref
from typing import Any

import torch

from . import devices, native

_DeviceLike = int | str | torch.device | None
_index = devices.index_of

_PRIVATEUSE1 = int(torch._C._autograd.DeviceType.PrivateUse1)
_DEVICE = "neuron"  # the PrivateUse1 backend's name (events take a device type; the index is the recording stream's)
_DEFAULT_ID = 0  # c10's id of a device's default stream

# Without the C++ core: stream ids and the current stream per thread and device, kept here.
_python_ids = itertools.count(1)
_python_current = threading.local()


def _new_id() -> int:
    lib = native.library()
    return int(lib.accel_neuron_emulator_new_stream()) if lib is not None else next(_python_ids)


def _current_id(index: int) -> int:
    lib = native.library()
    if lib is not None:
        return int(lib.accel_neuron_emulator_current_stream(index))
    return int(getattr(_python_current, "ids", {}).get(index, _DEFAULT_ID))


def _set_current_id(index: int, stream_id: int) -> None:
    lib = native.library()
    if lib is not None:
        lib.accel_neuron_emulator_set_current_stream(index, stream_id)
        return
    if not hasattr(_python_current, "ids"):
        _python_current.ids = {}
    _python_current.ids[index] = stream_id


class Stream(torch.Stream):
    """A stream of the emulated device, with an id of its own; execution is synchronous, so waits do nothing.

    A ``torch.Stream`` (as ``torch.cuda.Stream`` and every in-tree device's stream are), so the
    APIs that take one accept it: ``with stream:``, ``torch.accelerator.set_stream(stream)``,
    ``Tensor.record_stream(stream)`` (FSDP calls it on every unsharded parameter),
    ``torch.ops.fsdp.record_grad_output_stream``. Streams compare as ``torch.Stream``s do (device
    and id), so ``torch.accelerator.current_stream()`` equals the :class:`Stream` made current.
    ``query``, ``synchronize`` and ``wait_stream`` are ``torch.Stream``'s, answered by the device
    guard (complete, nothing to wait for); :meth:`record_event` makes an :class:`Event`.
    ``priority`` is kept on the object and means nothing to the emulated device.
    """

    priority: int

    def __new__(cls, device: _DeviceLike = None, priority: int = 0, **kwargs: Any) -> Stream:
        return cls._of(_index(device), _new_id(), priority)

    def __init__(self, device: _DeviceLike = None, priority: int = 0, **kwargs: Any) -> None:
        return None  # made whole by __new__

    @classmethod
    def _of(cls, index: int, stream_id: int, priority: int = 0) -> Stream:
        self = torch.Stream.__new__(cls, stream_id=stream_id, device_index=index, device_type=_PRIVATEUSE1)
        self.priority = priority
        _live[(index, stream_id)] = self
        return self

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return devices.DEVICES[self.device_index]

    def wait_event(self, event: torch.Event) -> None:
        """Make this stream wait for `event` (``event.wait(self)``, as CUDA's streams do): it is complete."""
        event.wait(self)

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        """Record `event` (default: a new :class:`Event`) on this stream and return it, as CUDA's streams do."""
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __repr__(self) -> str:
        which = "default" if self.stream_id == _DEFAULT_ID else f"id={self.stream_id}"
        return f"<torch.neuron.Stream device=neuron:{self.device_index} {which} (emulated, synchronous)>"


# The live Stream objects by (device index, id): current_stream() gives back the object made current.
_live: weakref.WeakValueDictionary[tuple[int, int], Stream] = weakref.WeakValueDictionary()


def _stream(index: int, stream_id: int) -> Stream:
    """The live :class:`Stream` of device `index` with `stream_id`, or a new handle for it."""
    found = _live.get((index, stream_id))
    return found if found is not None else Stream._of(index, stream_id)


class _EventType(type):
    """The type of :class:`Event`: its instances are the ``torch.Event`` objects of the neuron device."""

    def __instancecheck__(cls, obj: Any) -> bool:
        if type(obj) is torch.Event:
            return obj.device.type == _DEVICE
        return isinstance(obj, _HostEvent)


class Event(torch.Event, metaclass=_EventType):
    """``torch.neuron.Event(enable_timing=False, blocking=False)``: a ``torch.Event`` of the neuron device.

    TorchNeuron's signature (its ``torch_neuronx`` source; CUDA's adds ``interprocess``). What it
    makes is a plain ``torch.Event(device="neuron", ...)``, not an instance of a subclass: PyTorch
    2.13 takes only that exact type where an event is an argument (``torch.Stream.record_event``,
    ``Event.elapsed_time``'s other event), so this is what lets a ``torch.neuron.Event`` meet
    ``torch.Event``, ``torch.accelerator``'s streams and the autograd engine's events as one kind.
    ``isinstance(e, torch.neuron.Event)`` is True for every neuron event. The device guard
    (``csrc/device_guard.cpp``) records it on the current stream by default; execution is
    synchronous, so a recorded event is complete: ``query()`` is True, ``synchronize()`` and
    ``wait()`` return at once. ``elapsed_time`` is the host time in milliseconds between the two
    events' records on one device, and raises as CUDA does (``ValueError``) unless both were made
    with ``enable_timing=True`` and recorded. ``blocking`` changes nothing: waits never block here.
    Without the C++ core it makes a :class:`_HostEvent` instead.
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False) -> Any:
        if native.library() is None:
            return _HostEvent(enable_timing)
        return torch.Event(_DEVICE, enable_timing=enable_timing, blocking=blocking)


class _HostEvent:
    """``torch.neuron.Event`` without the C++ core: the host time of its last record.

    PyTorch's Python device guard records events but cannot synchronize or time them, and the
    stream state it sees is the default streams only: this event is the emulator's alone.
    """

    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: torch.Stream | None = None) -> None:
        self._time = time.perf_counter()

    def wait(self, stream: torch.Stream | None = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: _HostEvent) -> float:
        """Milliseconds between this event and `end_event` (both timed and recorded, as CUDA checks)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


def default_stream(device: _DeviceLike = None) -> Stream:
    """The default stream of `device` (default: the current device)."""
    return _stream(_index(device), _DEFAULT_ID)


def current_stream(device: _DeviceLike = None) -> Stream:
    """The calling thread's current stream on `device` (default: the current device).

    The one ``torch.accelerator.current_stream()`` and the autograd engine see: set by
    :func:`set_stream`, :func:`stream`, ``torch.accelerator.set_stream`` or ``with torch.Stream(...)``;
    the device's default stream otherwise.
    """
    index = _index(device)
    return _stream(index, _current_id(index))


def set_stream(stream: torch.Stream) -> None:
    """Make `stream` the calling thread's current stream on its device, and its device the current one.

    As ``torch.cuda.set_stream`` and ``torch.accelerator.set_stream`` do. Any neuron ``torch.Stream``
    is accepted (``torch.accelerator.current_stream()`` gives plain ones).
    """
    if not isinstance(stream, torch.Stream) or stream.device_type != _PRIVATEUSE1:
        raise TypeError(f"expected a neuron stream (torch.neuron.Stream or torch.Stream), got {stream!r}")
    index = devices.check(stream.device_index)
    _set_current_id(index, stream.stream_id)
    if devices.current() != index:
        devices.set_current(index)


@contextlib.contextmanager
def stream(stream: torch.Stream | None):
    """Context manager that makes `stream` current (and its device, as ``torch.cuda.stream``) for its body."""
    if stream is None:
        yield
        return
    prev_device = devices.current()
    index = devices.check(stream.device_index)
    prev = _current_id(index)
    set_stream(stream)
    try:
        yield
    finally:
        _set_current_id(index, prev)
        devices.set_current(prev_device)


def wait_stream(stream: torch.Stream) -> None:
    """Make the current stream wait for `stream`: a no-op under synchronous execution."""
    return None
