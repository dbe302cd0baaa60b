"""accel-abstraction: one PyTorch training script, any accelerator, one configuration line.

::

    import accel_abstraction as accel

    model.to(accel.device())
    with accel.autocast():
        loss = model(x)
    scaler = accel.GradScaler()
    accel.manual_seed_all(0)
    print(accel.max_memory_allocated())

The backend is chosen once, from ``accel.use(name)``, the ``ACCEL_BACKEND`` variable or
``backend = "..."`` in ``[tool.accel]`` of the nearest ``pyproject.toml`` (``"auto"``:
the best available). On selection every function below is rebound to the backend
object, so ``accel.synchronize()`` costs what ``torch.<device>.synchronize()`` costs.
Call them as ``accel.name(...)``; a reference taken with ``from accel_abstraction import
name`` before selection keeps working, through one extra lookup per call.

``device`` arguments accept an index, a string (``"cuda:1"``) or a ``torch.device``, as
``torch.accelerator`` does; ``None`` means the current device.

Importing this package is cheap: torch, pydantic and plugin discovery load on first use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._lazy import lazy_getattr

if TYPE_CHECKING:
    import torch

    from .features import Capabilities
    from .interface import Backend, DeviceLike

__version__ = "0.1.0"


def _b() -> Backend:
    from .runtime import current

    return current()


# --------------------------------------------------------------------------- selection


def use(name: str | None = None, **settings: Any) -> Backend:
    """Select the backend ``name`` (default: from the configuration) for the process; return it.

    Keyword arguments override ``ACCEL_*`` variables and ``[tool.accel]``:
    ``accel.use("cuda", device_index=1, amp_dtype="bfloat16", fallback="cpu")``.
    """
    from .runtime import use as _use

    return _use(name, **settings)


def configure(**settings: Any) -> Backend:
    """Select the backend from keyword settings (``backend=``, ``amp_dtype=``, ...); same as :func:`use`."""
    return use(**settings)


def using(name: str, **settings: Any) -> contextlib.AbstractContextManager[Backend]:
    """Select ``name`` inside a ``with`` block, restoring the previous selection after it (process-wide)."""
    from .runtime import using as _using

    return _using(name, **settings)


def backend() -> Backend:
    """The selected backend object (selected from the configuration on first call)."""
    return _b()


def device_type() -> str:
    """The ``torch.device`` type of the selected backend (``"cpu"``, ``"cuda"``, ``"neuron"``)."""
    return _b().device_type


def is_available() -> bool:
    """True if the selected backend can run (always, once selection succeeded)."""
    return _b().is_available()


def capabilities() -> Capabilities:
    """What the selected backend supports; unsupported features raise ``CapabilityError``."""
    return _b().capabilities()


# --------------------------------------------------------------------------- devices


def device_count() -> int:
    """Number of devices of the selected backend visible to this process."""
    return _b().device_count()


def current_device() -> int:
    """Index of the current device."""
    return _b().current_device()


def set_device(device: DeviceLike) -> None:
    """Make ``device`` the current device."""
    _b().set_device(device)


def device(index: DeviceLike = None) -> torch.device:
    """The ``torch.device`` to put tensors on (``index`` given: that device). Cached objects."""
    return _b().device(index)


def device_name(device: DeviceLike = None) -> str:
    """Human-readable name of the device."""
    return _b().device_name(device)


# --------------------------------------------------------------------------- execution


def synchronize(device: DeviceLike = None) -> None:
    """Wait until all work queued on ``device`` has finished."""
    _b().synchronize(device)


def current_stream(device: DeviceLike = None) -> Any:
    """The current stream (``CapabilityError`` where the backend has no streams)."""
    return _b().current_stream(device)


def stream(s: Any) -> contextlib.AbstractContextManager[Any]:
    """Context manager that queues work on stream ``s``."""
    return _b().stream(s)


def Stream(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - mirrors torch.cuda.Stream
    """A new stream of the selected backend (``CapabilityError`` where it has none)."""
    return _b().Stream(*args, **kwargs)


def Event(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - mirrors torch.cuda.Event
    """A new event of the selected backend (``CapabilityError`` where it has none)."""
    return _b().Event(*args, **kwargs)


# --------------------------------------------------------------------------- memory


def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes occupied by tensors on ``device``."""
    return _b().memory_allocated(device)


def max_memory_allocated(device: DeviceLike = None) -> int:
    """Peak bytes occupied by tensors since start or :func:`reset_peak_memory_stats`."""
    return _b().max_memory_allocated(device)


def memory_reserved(device: DeviceLike = None) -> int:
    """Bytes held by the backend's caching allocator."""
    return _b().memory_reserved(device)


def max_memory_reserved(device: DeviceLike = None) -> int:
    """Peak of :func:`memory_reserved`."""
    return _b().max_memory_reserved(device)


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Reset the peaks of ``max_memory_*``."""
    _b().reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Release cached unoccupied memory."""
    _b().empty_cache()


def memory_stats(device: DeviceLike = None) -> dict[str, Any]:
    """The allocator's statistics (backend-specific keys)."""
    return _b().memory_stats(device)


def mem_get_info(device: DeviceLike = None) -> tuple[int, int]:
    """``(free, total)`` bytes of device memory."""
    return _b().mem_get_info(device)


# --------------------------------------------------------------------------- RNG


def manual_seed(seed: int) -> Any:
    """Seed the CPU generator and the current device's generator."""
    return _b().manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the CPU generator and every device's generator of the selected backend."""
    _b().manual_seed_all(seed)


def seed() -> int:
    """Seed CPU and devices non-deterministically; return the seed."""
    return _b().seed()


def initial_seed() -> int:
    """The current device generator's seed."""
    return _b().initial_seed()


def get_rng_state(device: DeviceLike = None) -> torch.Tensor:
    """The device generator state (a ``ByteTensor``)."""
    return _b().get_rng_state(device)


def set_rng_state(state: torch.Tensor, device: DeviceLike = None) -> None:
    """Restore a state from :func:`get_rng_state`."""
    _b().set_rng_state(state, device)


def get_rng_state_all() -> list[torch.Tensor]:
    """States of every device's generator."""
    return _b().get_rng_state_all()


def set_rng_state_all(states: Sequence[torch.Tensor]) -> None:
    """Restore the states from :func:`get_rng_state_all`."""
    _b().set_rng_state_all(states)


def fork_rng(devices: Sequence[DeviceLike] | None = None, enabled: bool = True) -> contextlib.AbstractContextManager[None]:
    """Context manager restoring CPU and device RNG states when the block exits."""
    return _b().fork_rng(devices, enabled)


# --------------------------------------------------------------------------- AMP


def autocast(dtype: torch.dtype | None = None, enabled: bool = True, cache_enabled: bool | None = None) -> Any:
    """``torch.autocast`` for the selected device with the backend's right default dtype."""
    return _b().autocast(dtype, enabled, cache_enabled)


def GradScaler(  # noqa: N802 - mirrors torch.amp.GradScaler
    init_scale: float = 2.0**16,
    growth_factor: float = 2.0,
    backoff_factor: float = 0.5,
    growth_interval: int = 2000,
    enabled: bool | None = None,
) -> torch.amp.GradScaler:
    """A ``torch.amp.GradScaler`` on the selected device; disabled unless the AMP dtype is float16."""
    return _b().GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def is_bf16_supported() -> bool:
    """True if the selected device computes in bfloat16."""
    return _b().is_bf16_supported()


def is_fp16_supported() -> bool:
    """True if the selected device computes in float16."""
    return _b().is_fp16_supported()


def supported_dtypes() -> list[torch.dtype]:
    """Dtypes autocast can use on the selected device."""
    return _b().supported_dtypes()


# --------------------------------------------------------------------------- numerics


def set_deterministic(flag: bool, warn_only: bool = False) -> None:
    """Use deterministic algorithms only (and the backend's own determinism knobs)."""
    _b().set_deterministic(flag, warn_only)


def set_benchmark(flag: bool) -> None:
    """Let the backend auto-tune kernels (cuDNN benchmark on CUDA; a declared no-op elsewhere)."""
    _b().set_benchmark(flag)


def set_allow_tf32(flag: bool) -> None:
    """Allow TF32 math where the backend has it (a declared no-op elsewhere)."""
    _b().set_allow_tf32(flag)


# --------------------------------------------------------------------------- distributed and data


def dist_backend() -> str:
    """The ``torch.distributed`` backend for the selected device (``gloo``, ``nccl``, ``neuron``, ``xla``)."""
    return _b().dist_backend()


def visible_devices_env() -> str:
    """The variable restricting visible devices (``CUDA_VISIBLE_DEVICES``, ``NEURON_RT_VISIBLE_CORES``)."""
    return _b().visible_devices_env()


def pin_memory(tensor: torch.Tensor) -> torch.Tensor:
    """A page-locked copy of a CPU tensor (``CapabilityError`` where unsupported)."""
    return _b().pin_memory(tensor)


def pin_memory_device() -> str:
    """The device type a DataLoader should pin memory for."""
    return _b().pin_memory_device()


# The lazy versions above, kept so that runtime.reset() can restore them.
_STUBS: dict[str, Callable[..., Any]] = {
    name: obj
    for name, obj in dict(globals()).items()
    if getattr(obj, "__module__", None) == __name__
    and callable(obj)
    and not name.startswith("_")
    and name not in ("use", "configure", "using")
}

# Names served from submodules on first access (keeps `import accel_abstraction` cheap).
_LAZY: dict[str, str] = {
    "Backend": "interface",
    "BackendSpec": "registry",
    "Capabilities": "features",
    "Availability": "features",
    "hookimpl": "hookspecs",
    "AccelError": "errors",
    "BackendUnavailableError": "errors",
    "CapabilityError": "errors",
    "ConfigError": "errors",
    "DeviceIndexError": "errors",
    "PluginError": "errors",
    "UnknownBackendError": "errors",
    "AccelSettings": "settings",
    "init_distributed": "distributed",
    "destroy_distributed": "distributed",
    "barrier": "distributed",
    "is_main_process": "distributed",
    "DistInfo": "distributed",
    "DistributedError": "distributed",
    "log_metric": "metrics",
    "log_settings": "metrics",
    "redirect_cuda": "redirect",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
