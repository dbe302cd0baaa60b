"""``torch.neuron``: the device module of the emulated device.

It exposes the names the native backend's ``torch.neuron`` documents (see
NEURON.md), with the emulator's semantics: one device (index 0) per process,
synchronous execution (streams and events are no-ops that keep the API
shape), memory statistics counted per storage, and a device generator of its
own. ``_is_emulated`` is True so a backend can tell emulation from hardware.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

from . import memory, rng
from .errors import limit

_is_emulated = True

_DeviceLike = int | str | torch.device | None

# A Trn2 logical NeuronCore at LNC=2 has a quarter of the chip's 96 GiB of HBM.
_TOTAL_MEMORY = 24 * 1024**3
_initialized = False


def _index(device: _DeviceLike) -> int:
    """Validate a device argument and return its index (always 0 here)."""
    if device is None:
        return 0
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "neuron":
            raise ValueError(f"expected a neuron device, got {device}")
        idx = 0 if device.index is None else device.index
    elif isinstance(device, int):
        idx = device
    else:
        raise TypeError(f"expected a device index, string or torch.device, got {device!r}")
    if idx == -1:
        return 0
    if idx != 0:
        raise limit(
            f"neuron device index {idx}",
            "The emulator has one device per process (neuron:0); "
            "run one process per device, as torchrun does on Trainium.",
        )
    return 0


# ---------------------------------------------------------------- devices


def is_available() -> bool:
    """True: the emulated device is always available once installed."""
    return True


def device_count() -> int:
    """1: the emulator provides one device per process."""
    return 1


def current_device() -> int:
    """The current device index (always 0)."""
    return 0


def set_device(device: _DeviceLike) -> None:
    """Select the current device; only index 0 exists."""
    _index(device)


class device:
    """Context manager that selects a device (only index 0 exists; -1 and None are no-ops)."""

    def __init__(self, device: _DeviceLike) -> None:
        self.idx = _index(device)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def is_initialized() -> bool:
    """Whether :func:`init` has run or a neuron tensor has been created (as CUDA's lazy init)."""
    return _initialized


def init() -> None:
    """Initialise the device (a no-op for the emulator, recorded for :func:`is_initialized`)."""
    global _initialized
    _initialized = True


def _is_in_bad_fork() -> bool:
    return False


@dataclass(frozen=True)
class _DeviceProperties:
    name: str
    total_memory: int
    is_emulated: bool = True


def get_device_name(device: _DeviceLike = None) -> str:
    """The device name: says that this is the CPU emulation."""
    _index(device)
    return "neuron-emulator (CPU)"


def get_device_properties(device: _DeviceLike = None) -> _DeviceProperties:
    """Properties with ``.name`` and ``.total_memory`` (24 GiB, a Trn2 logical core's HBM share)."""
    _index(device)
    return _DeviceProperties(name=get_device_name(), total_memory=_TOTAL_MEMORY)


def synchronize(device: _DeviceLike = None) -> None:
    """Wait for the device: execution is synchronous, so this returns at once."""
    _index(device)


# ---------------------------------------------------------------- memory


def memory_allocated(device: _DeviceLike = None) -> int:
    """Bytes held by live neuron storages."""
    _index(device)
    return memory.allocated()


def max_memory_allocated(device: _DeviceLike = None) -> int:
    """Peak of :func:`memory_allocated` since the last :func:`reset_peak_memory_stats`."""
    _index(device)
    return memory.peak()


def memory_reserved(device: _DeviceLike = None) -> int:
    """Bytes reserved: no caching allocator, so equal to :func:`memory_allocated`."""
    _index(device)
    return memory.allocated()


def max_memory_reserved(device: _DeviceLike = None) -> int:
    """Peak of :func:`memory_reserved`."""
    _index(device)
    return memory.peak()


def memory_stats(device: _DeviceLike = None) -> OrderedDict[str, Any]:
    """A statistics dict; its keys are not a stable contract (as on the native backend)."""
    _index(device)
    return memory.stats()


def memory_summary(device: _DeviceLike = None, abbreviated: bool = False) -> str:
    """A human-readable summary of the memory statistics."""
    _index(device)
    return memory.summary()


def reset_peak_memory_stats(device: _DeviceLike = None) -> None:
    """Set the peaks to the current values."""
    _index(device)
    memory.reset_peak()


def reset_accumulated_memory_stats(device: _DeviceLike = None) -> None:
    """Zero the counts of allocations and frees."""
    _index(device)
    memory.reset_accumulated()


def empty_cache() -> None:
    """Release cached memory: nothing is cached, so a no-op."""


# ---------------------------------------------------------------- random numbers


def manual_seed(seed: int) -> None:
    """Seed the device generator."""
    rng.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the generator of every device (there is one)."""
    rng.manual_seed(seed)


def seed() -> None:
    """Seed the device generator with a non-deterministic number."""
    rng.seed()


def seed_all() -> None:
    """Seed every device generator with a non-deterministic number."""
    rng.seed()


def initial_seed() -> int:
    """The seed of the device generator."""
    return rng.initial_seed()


def get_rng_state(device: _DeviceLike = "neuron") -> torch.Tensor:
    """The device generator state as a CPU uint8 tensor."""
    _index(device)
    return rng.get_state()


def set_rng_state(new_state: torch.Tensor, device: _DeviceLike = "neuron") -> None:
    """Restore a state from :func:`get_rng_state`."""
    _index(device)
    rng.set_state(new_state)


# ---------------------------------------------------------------- streams and events


class Stream:
    """A stream handle. Execution is synchronous, so waiting and recording do nothing."""

    def __init__(self, device: _DeviceLike = None, priority: int = 0, **kwargs: Any) -> None:
        _index(device)
        self.device_index = 0
        self.device_type = "neuron"
        self.priority = priority

    @property
    def device(self) -> torch.device:
        return torch.device("neuron", 0)

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
        return f"<torch.neuron.Stream device=neuron:0 (emulated, synchronous) at {id(self):#x}>"


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


_default_stream = Stream()
_current = [_default_stream]


def default_stream(device: _DeviceLike = None) -> Stream:
    """The default stream of the device."""
    _index(device)
    return _default_stream


def current_stream(device: _DeviceLike = None) -> Stream:
    """The stream set by :func:`set_stream` (the default stream otherwise)."""
    _index(device)
    return _current[0]


def set_stream(stream: Stream) -> None:
    """Make `stream` current."""
    if not isinstance(stream, Stream):
        raise TypeError(f"expected a torch.neuron.Stream, got {type(stream).__name__}")
    _current[0] = stream


@contextlib.contextmanager
def stream(stream: Stream | None):
    """Context manager that makes `stream` current for its body."""
    if stream is None:
        yield
        return
    prev = _current[0]
    set_stream(stream)
    try:
        yield
    finally:
        _current[0] = prev


def wait_stream(stream: Stream) -> None:
    """Make the current stream wait for `stream`: a no-op under synchronous execution."""
    return None


# ---------------------------------------------------------------- mixed precision


def is_bf16_supported() -> bool:
    """True: bfloat16 is the native training type."""
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    """The dtypes autocast accepts on this device."""
    return [torch.float32, torch.float16, torch.bfloat16]
