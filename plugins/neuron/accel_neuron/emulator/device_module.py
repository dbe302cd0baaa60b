"""``torch.neuron``: the device module of the emulated device.

It exposes the names the native backend's ``torch.neuron`` documents (the list is in
``plugins/neuron/README.md`` and ``tests/test_emulator_install.py``), with the emulator's semantics: ``N`` devices per process
(``ACCEL_NEURON_EMULATE_DEVICES``, default 2) with a current device per thread,
synchronous execution (streams order nothing and events are complete once recorded, but streams
keep their ids and a current stream per device and thread that PyTorch's C++ side sees:
:mod:`.device_streams`), memory statistics counted per storage and device, and a generator per
device. ``_is_emulated`` is True so a backend can tell emulation from hardware.
"""

from __future__ import annotations

import sys
import types
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from . import devices, memory, rng
from .device_streams import (  # noqa: F401 - torch.neuron's stream and event names
    Event,
    Stream,
    current_stream,
    default_stream,
    set_stream,
    stream,
    wait_stream,
)

_is_emulated = True

_DeviceLike = int | str | torch.device | None

# Whether the device was used (what is_initialized() answers). torch reads CUDA's private
# ``_initialized`` flag off the module (torch.utils.checkpoint: stash the device's RNG state or
# not): this module's class (_DeviceModule, at the end) answers it with is_initialized().
_used = False


_index = devices.index_of


# ---------------------------------------------------------------- devices


def is_available() -> bool:
    """True: the emulated device is always available once installed."""
    return True


def device_count() -> int:
    """How many devices the emulator shows (``ACCEL_NEURON_EMULATE_DEVICES``, default 2)."""
    return devices.count()


def current_device() -> int:
    """The index of the calling thread's current device (0 until :func:`set_device`)."""
    return devices.current()


def set_device(device: _DeviceLike) -> None:
    """Make `device` the calling thread's current device (-1 and None change nothing).

    Like ``torch.cuda.set_device`` it initialises the device (:func:`is_initialized`).
    """
    global _used
    if device is None or device == -1:
        return
    devices.set_current(_index(device))
    _used = True


def _exchange_device(device: int) -> int:
    """Make index `device` current and return the previous index (-1: change nothing, return -1)."""
    if device < 0:
        return -1
    prev = devices.current()
    devices.set_current(devices.check(device))
    return prev


_maybe_exchange_device = _exchange_device  # as torch.cuda/xpu/mtia name the pair (dynamo device interface)


class device:
    """Context manager that makes a device current for its body (-1 and None change nothing)."""

    def __init__(self, device: _DeviceLike) -> None:
        self.idx = -1 if device is None or device == -1 else _index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = _exchange_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        _exchange_device(self.prev_idx)


class device_of(device):
    """Context manager that makes the device of tensor `obj` current (a CPU tensor: no change)."""

    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.device.type == "neuron" else -1)


class _utils:  # noqa: N801 - the name torch.serialization looks for
    """``torch.neuron._utils``: what ``torch.load(map_location="neuron[:i]")`` asks the device module."""

    @staticmethod
    def _get_device_index(device: _DeviceLike, optional: bool = False, allow_cpu: bool = False) -> int:
        """The index `device` names; no index means the current device (as for CUDA)."""
        if allow_cpu and isinstance(device, (str, torch.device)) and torch.device(device).type == "cpu":
            return -1
        return _index(device)


# With the compiled per-op path, the C++ core records the first neuron storage (native.device_used).
_native_used: Callable[..., bool] | None = None


def read_first_use_from(flag: Callable[..., bool]) -> None:
    """Answer :func:`is_initialized` from the C++ core's first-use `flag` too (install, compiled path).

    `flag()` reads it, `flag(value)` sets it (``native.device_used``).
    """
    global _native_used
    _native_used = flag


def is_initialized() -> bool:
    """Whether :func:`init` has run or a neuron tensor has been created (as CUDA's lazy init).

    With the compiled per-op path a neuron storage is made in C++ without Python knowing: the
    core's first-use flag (``native.device_used``) is read here. ``torch.neuron._initialized``
    answers the same (:class:`_DeviceModule`).
    """
    global _used
    if not _used and _native_used is not None and _native_used():
        _used = True
    return _used


def set_initialized(value: bool) -> None:
    """Set what :func:`is_initialized` answers (the self-test restores it after its own tensors)."""
    global _used
    _used = value
    if _native_used is not None:
        _native_used(value)


def init() -> None:
    """Initialise the device (a no-op for the emulator, recorded for :func:`is_initialized`)."""
    global _used
    _used = True


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
    """Properties with ``.name`` and ``.total_memory`` (the emulated device's memory: by default 24 GiB,
    a Trn2 logical core's HBM share; ``emulate_memory`` / ``ACCEL_NEURON_EMULATE_MEMORY``)."""
    _index(device)
    return _DeviceProperties(name=get_device_name(), total_memory=memory.capacity(_index(device)))


def synchronize(device: _DeviceLike = None) -> None:
    """Wait for the device: execution is synchronous, so this returns at once."""
    _index(device)


# ---------------------------------------------------------------- memory


def memory_allocated(device: _DeviceLike = None) -> int:
    """Bytes held by live neuron storages."""
    return memory.allocated(_index(device))


def max_memory_allocated(device: _DeviceLike = None) -> int:
    """Peak of :func:`memory_allocated` since the last :func:`reset_peak_memory_stats`."""
    return memory.peak(_index(device))


def memory_reserved(device: _DeviceLike = None) -> int:
    """Bytes reserved: no caching allocator, so equal to :func:`memory_allocated`."""
    return memory.allocated(_index(device))


def max_memory_reserved(device: _DeviceLike = None) -> int:
    """Peak of :func:`memory_reserved`."""
    return memory.peak(_index(device))


def memory_stats(device: _DeviceLike = None) -> OrderedDict[str, Any]:
    """A statistics dict; its keys are not a stable contract (as on the native backend)."""
    return memory.stats(_index(device))


def memory_summary(device: _DeviceLike = None, abbreviated: bool = False) -> str:
    """A human-readable summary of the memory statistics."""
    return memory.summary(_index(device))


def reset_peak_memory_stats(device: _DeviceLike = None) -> None:
    """Set the peaks to the current values."""
    memory.reset_peak(_index(device))


def reset_accumulated_memory_stats(device: _DeviceLike = None) -> None:
    """Zero the counts of allocations and frees."""
    memory.reset_accumulated(_index(device))


def empty_cache() -> None:
    """Release cached memory: nothing is cached, so a no-op."""


# ---------------------------------------------------------------- random numbers


def manual_seed(seed: int) -> None:
    """Seed the generator of the current device."""
    rng.manual_seed(seed, devices.current())


def manual_seed_all(seed: int) -> None:
    """Seed the generator of every device with `seed`."""
    for index in range(devices.count()):
        rng.manual_seed(seed, index)


def seed() -> None:
    """Seed the generator of the current device with a non-deterministic number."""
    rng.seed(devices.current())


def seed_all() -> None:
    """Seed every device generator with one non-deterministic number."""
    manual_seed_all(rng.seed(0))


def initial_seed() -> int:
    """The seed of the current device's generator."""
    return rng.initial_seed(devices.current())


def get_rng_state(device: _DeviceLike = "neuron") -> torch.Tensor:
    """The generator state of `device` (default: the current device) as a CPU uint8 tensor."""
    return rng.get_state(_index(device))


def set_rng_state(new_state: torch.Tensor, device: _DeviceLike = "neuron") -> None:
    """Restore a state from :func:`get_rng_state` on `device` (default: the current device)."""
    rng.set_state(new_state, _index(device))


# ---------------------------------------------------------------- mixed precision


def is_bf16_supported() -> bool:
    """True: bfloat16 is the native training type."""
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    """The dtypes autocast accepts on this device."""
    return [torch.float32, torch.float16, torch.bfloat16]


# ---------------------------------------------------------------- CUDA's private flag


class _DeviceModule(types.ModuleType):
    """The class of this module: ``_initialized`` is :func:`is_initialized`, not a stale variable.

    torch reads ``getattr(device_module, "_initialized", False)`` (CUDA's lazy-init flag) where
    it must not initialise the device by asking: ``torch.utils.checkpoint`` stashes the device's
    RNG state before the forward, and restores it for the recomputation, only if the flag is
    set. A module variable set by Python alone stayed False on the compiled per-op path (the C++
    core makes the storages and records their first use in its own flag), so checkpoint
    recomputed dropout with the RNG state after the forward: other masks, wrong gradients.
    """

    @property
    def _initialized(self) -> bool:
        return is_initialized()

    @_initialized.setter
    def _initialized(self, value: bool) -> None:
        set_initialized(bool(value))


sys.modules[__name__].__class__ = _DeviceModule
