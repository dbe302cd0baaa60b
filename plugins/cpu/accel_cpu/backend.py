"""The CPU backend: always available, the reference every other backend is compared with."""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Callable, Mapping
from typing import Any

import torch

from accel_abstraction.features import Availability, Capabilities
from accel_abstraction.interface import Backend, DeviceLike

from . import memory

__all__ = ["CpuBackend"]


class CpuBackend(Backend):
    """Runs on ``torch.device("cpu")``.

    One device, ``torch.device("cpu")`` whatever index names it (:meth:`device`). No streams, events or pinned memory: those raise :class:`CapabilityError`.
    Memory statistics are the process's resident set size and its kernel-kept peak
    (``capabilities().memory_source == "process"``, see :mod:`accel_cpu.memory`); there is
    no cache to empty, so :meth:`empty_cache` does nothing. Autocast defaults to bfloat16
    (PyTorch's CPU autocast dtype), so ``GradScaler()`` is disabled unless
    ``amp_dtype="float16"`` is configured.
    """

    name = "cpu"
    device_type = "cpu"
    dist_backend_name = "gloo"

    def availability(self) -> Availability:
        return Availability.yes()

    def capabilities(self) -> Capabilities:
        return Capabilities(
            fp16=True,
            bf16=True,
            deterministic=True,
            distributed=torch.distributed.is_available(),
            compile_backend="inductor",
            memory_stats=memory.supported(),
            memory_source="process",
            accelerator=False,
        )

    def hot_bindings(self) -> Mapping[str, Callable[..., Any]]:
        # Only callables that mean exactly what the methods below mean. torch.cpu.synchronize
        # ignores its argument, while accel.synchronize(7) must say index 7 does not exist, so
        # it is bound to a plain function that checks a given device (torch's own is a Python
        # function too). It is a copy of _synchronize whose globals hold this backend's
        # index_of: a closure would copy its cell on every call (33 ns against torch's 26 ns,
        # timeit on this machine); a global is looked up only when a device is given (29 ns).
        synchronize = types.FunctionType(
            _synchronize.__code__,
            {"_index_of": self.index_of, "__builtins__": __builtins__},
            "synchronize",
            _synchronize.__defaults__,
        )
        synchronize.__doc__ = Backend.synchronize.__doc__
        return {
            "synchronize": synchronize,
            "device_count": torch.cpu.device_count,
            "current_device": _current_device,
            "manual_seed": torch.default_generator.manual_seed,  # argument checked by accel's binding
        }

    # identity ---------------------------------------------------------------

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def set_device(self, device: DeviceLike) -> None:
        self.index_of(device)  # validates; there is only one CPU device

    def device(self, index: DeviceLike = None) -> torch.device:
        """``torch.device("cpu")`` for every valid index: the device CPU tensors report.

        ``cpu:0`` would be a different answer where PyTorch compares devices
        (``t.device == accel.device(0)`` is False for it) and one ``torch.load(map_location=...)``
        refuses ("don't know how to restore data location ... tagged with cpu:0"), so a port of
        ``torch.device(0)`` or ``f"cuda:{rank}"`` to ``accel.device(i)`` works where the index is 0.
        """
        if index is not None:
            self.index_of(index)  # validates: index 1 is out of range, "cuda:0" is another type
        dev = self._default_device
        if dev is None:
            dev = self._default_device = torch.device("cpu")
        return dev

    def device_name(self, device: DeviceLike = None) -> str:
        self.index_of(device)
        return f"CPU ({os.cpu_count()} logical cores, {torch.get_num_threads()} torch threads)"

    def synchronize(self, device: DeviceLike = None) -> None:
        if device is not None:
            self.index_of(device)

    # RNG: the CPU device *is* the default generator ---------------------------

    def manual_seed(self, seed: int) -> None:
        torch.default_generator.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.default_generator.manual_seed(seed)

    def seed(self) -> int:
        return int(torch.default_generator.seed())

    def initial_seed(self) -> int:
        return int(torch.default_generator.initial_seed())

    def get_rng_state(self, device: DeviceLike = None) -> torch.Tensor:
        self.index_of(device)
        return torch.get_rng_state()

    def set_rng_state(self, new_state: torch.Tensor, device: DeviceLike = None) -> None:
        self.index_of(device)
        torch.set_rng_state(new_state)

    def fork_rng(
        self, devices: Any = None, enabled: bool = True
    ) -> contextlib.AbstractContextManager[None]:
        return torch.random.fork_rng(devices=[], enabled=enabled)  # type: ignore[return-value]

    # AMP --------------------------------------------------------------------

    def preferred_amp_dtype(self) -> torch.dtype:
        return torch.bfloat16

    def supported_dtypes(self) -> list[torch.dtype]:
        return [torch.float32, torch.bfloat16, torch.float16]

    def is_bf16_supported(self) -> bool:
        return True

    # distributed -----------------------------------------------------------

    def before_init_process_group(self, local_rank: int) -> None:
        """Nothing to bind: every rank shares the host's CPU."""

    # memory: the process's RSS and its peak (accel_cpu.memory) --------------------

    def memory_allocated(self, device: DeviceLike = None) -> int:
        """The process's resident set size in bytes (not only tensors: see :mod:`accel_cpu.memory`)."""
        self._memory(device)
        return memory.rss()

    def max_memory_allocated(self, device: DeviceLike = None) -> int:
        """The peak resident set size since start or the last :meth:`reset_peak_memory_stats`."""
        self._memory(device)
        return memory.peak()

    memory_reserved = memory_allocated
    max_memory_reserved = max_memory_allocated

    def reset_peak_memory_stats(self, device: DeviceLike = None) -> None:
        self._memory(device)
        memory.reset_peak()

    def empty_cache(self) -> None:
        """Nothing to do: the CPU allocator returns freed memory directly, it keeps no cache."""

    def memory_stats(self, device: DeviceLike = None) -> dict[str, Any]:
        self._memory(device)
        return dict(memory.stats())

    def mem_get_info(self, device: DeviceLike = None) -> tuple[int, int]:
        """``(available, total)`` host memory (``MemAvailable``, ``MemTotal``)."""
        self._memory(device)
        return memory.mem_info()

    def _memory(self, device: DeviceLike) -> None:
        self.require("memory_stats")
        self.index_of(device)

    def env_info(self) -> list[tuple[str, str]]:
        return [
            ("torch", torch.__version__),
            ("torch threads", str(torch.get_num_threads())),
            ("MKL-DNN", str(torch.backends.mkldnn.is_available())),
        ]


def _current_device() -> int:
    return 0


def _synchronize(device: DeviceLike = None) -> None:
    """Template of the bound ``accel.synchronize`` (see :meth:`CpuBackend.hot_bindings`)."""
    if device is not None:
        _index_of(device)  # type: ignore[name-defined]  # noqa: F821 - a global of each bound copy
