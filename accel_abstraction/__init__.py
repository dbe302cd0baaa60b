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

from . import api as _api
from ._lazy import lazy_getattr, torch_first
from .scaler_defaults import SCALER

if TYPE_CHECKING:
    import torch

    from .features import Capabilities
    from .interface import Backend, DeviceLike

__version__ = "0.1.0"


def _b() -> Backend:
    torch_first()  # before runtime's import: see _lazy.torch_first
    from .runtime import current

    return current()


def _bound(name: str) -> Callable[..., Any]:
    """What ``accel.<name>`` is bound to once a backend is selected (selecting it first).

    The functions below call through it, so a reference taken before selection
    (``from accel_abstraction import synchronize``) behaves exactly like the bound one.
    """
    backend = _b()
    fn = globals()[name]
    return getattr(backend, name) if fn is _STUBS.get(name) else fn


# --------------------------------------------------------------------------- selection


def use(name: str | None = None, **settings: Any) -> Backend:
    """Select the backend ``name`` (default: from the configuration) for the process; return it.

    Keyword arguments override ``ACCEL_*`` variables and ``[tool.accel]``:
    ``accel.use("cuda", device_index=1, amp_dtype="bfloat16", fallback="cpu")``.
    """
    torch_first()
    from .runtime import use as _use

    return _use(name, **settings)


def configure(**settings: Any) -> Backend:
    """Select the backend from keyword settings (``backend=``, ``amp_dtype=``, ...); same as :func:`use`."""
    return use(**settings)


def using(name: str, **settings: Any) -> contextlib.AbstractContextManager[Backend]:
    """Select ``name`` inside a ``with`` block, restoring the previous selection after it (process-wide)."""
    torch_first()
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
    return _bound("is_available")()


def is_accelerator_available() -> bool:
    """True if the selected backend is an accelerator other than the host CPU (as ``torch.accelerator.is_available()``).

    False on the cpu backend, true on a GPU or an (even emulated) accelerator device. What
    ``accel port`` writes for ``torch.cuda.is_available()``: the ported program takes its
    CPU branch on the cpu backend, as the original did on a machine without CUDA.
    """
    return _bound("is_accelerator_available")()


def capabilities() -> Capabilities:
    """What the selected backend supports; unsupported features raise ``CapabilityError``."""
    return _bound("capabilities")()


# --------------------------------------------------------------------------- devices


def device_count() -> int:
    """Number of devices of the selected backend visible to this process."""
    return _bound("device_count")()


def current_device() -> int:
    """Index of the current device."""
    return _bound("current_device")()


def set_device(device: DeviceLike) -> None:
    """Make ``device`` the current device."""
    _bound("set_device")(device)


def device(index: DeviceLike = None) -> torch.device:
    """The ``torch.device`` to put tensors on (``index`` given: that device). Cached objects."""
    return _bound("device")(index)


def device_name(device: DeviceLike = None) -> str:
    """Human-readable name of the device."""
    return _bound("device_name")(device)


# --------------------------------------------------------------------------- execution


def synchronize(device: DeviceLike = None) -> None:
    """Wait until all work queued on ``device`` has finished."""
    _bound("synchronize")(device)


def current_stream(device: DeviceLike = None) -> Any:
    """The current stream (``CapabilityError`` where the backend has no streams)."""
    return _bound("current_stream")(device)


def stream(stream: Any) -> contextlib.AbstractContextManager[Any]:
    """Context manager that queues work on ``stream`` inside the block."""
    return _bound("stream")(stream)


def Stream(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - mirrors torch.cuda.Stream
    """A new stream of the selected backend (``CapabilityError`` where it has none)."""
    return _bound("Stream")(*args, **kwargs)


def Event(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - mirrors torch.cuda.Event
    """A new event of the selected backend (``CapabilityError`` where it has none)."""
    return _bound("Event")(*args, **kwargs)


# --------------------------------------------------------------------------- memory


def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes occupied by tensors on ``device``."""
    return _bound("memory_allocated")(device)


def max_memory_allocated(device: DeviceLike = None) -> int:
    """Peak bytes occupied by tensors since start or :func:`reset_peak_memory_stats`."""
    return _bound("max_memory_allocated")(device)


def memory_reserved(device: DeviceLike = None) -> int:
    """Bytes held by the backend's caching allocator."""
    return _bound("memory_reserved")(device)


def max_memory_reserved(device: DeviceLike = None) -> int:
    """Peak of :func:`memory_reserved`."""
    return _bound("max_memory_reserved")(device)


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Reset the peaks of ``max_memory_*``."""
    _bound("reset_peak_memory_stats")(device)


def empty_cache() -> None:
    """Release cached unoccupied memory."""
    _bound("empty_cache")()


def memory_stats(device: DeviceLike = None) -> dict[str, Any]:
    """The allocator's statistics (backend-specific keys)."""
    return _bound("memory_stats")(device)


def mem_get_info(device: DeviceLike = None) -> tuple[int, int]:
    """``(free, total)`` bytes of device memory."""
    return _bound("mem_get_info")(device)


# --------------------------------------------------------------------------- RNG


def manual_seed(seed: int) -> None:
    """Seed the CPU generator and the current device's generator (``ArgumentTypeError`` unless an integer)."""
    _bound("manual_seed")(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the CPU generator and every device's generator of the selected backend."""
    _bound("manual_seed_all")(seed)


def seed() -> int:
    """Seed CPU and devices non-deterministically; return the seed."""
    return _bound("seed")()


def initial_seed() -> int:
    """The current device generator's seed."""
    return _bound("initial_seed")()


def get_rng_state(device: DeviceLike = None) -> torch.Tensor:
    """The device generator state (a ``ByteTensor``)."""
    return _bound("get_rng_state")(device)


def set_rng_state(new_state: torch.Tensor, device: DeviceLike = None) -> None:
    """Restore a state from :func:`get_rng_state` (argument names as ``torch.cuda.set_rng_state``'s)."""
    _bound("set_rng_state")(new_state, device)


def get_rng_state_all() -> list[torch.Tensor]:
    """States of every device's generator."""
    return _bound("get_rng_state_all")()


def set_rng_state_all(new_states: Sequence[torch.Tensor]) -> None:
    """Restore the states from :func:`get_rng_state_all` (argument name as ``torch.cuda.set_rng_state_all``'s)."""
    _bound("set_rng_state_all")(new_states)


def fork_rng(devices: Sequence[DeviceLike] | None = None, enabled: bool = True) -> contextlib.AbstractContextManager[None]:
    """Context manager restoring CPU and device RNG states when the block exits."""
    return _bound("fork_rng")(devices, enabled)


# --------------------------------------------------------------------------- AMP


def autocast(dtype: torch.dtype | None = None, enabled: bool = True, cache_enabled: bool | None = None) -> Any:
    """``torch.autocast`` for the selected device with the backend's right default dtype."""
    return _bound("autocast")(dtype, enabled, cache_enabled)


def GradScaler(  # noqa: N802 - mirrors torch.amp.GradScaler
    init_scale: float = SCALER.init_scale,
    growth_factor: float = SCALER.growth_factor,
    backoff_factor: float = SCALER.backoff_factor,
    growth_interval: int = SCALER.growth_interval,
    enabled: bool | None = None,
) -> torch.amp.GradScaler:
    """A ``torch.amp.GradScaler`` on the selected device; disabled unless the AMP dtype is float16."""
    return _bound("GradScaler")(init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True if the selected device computes in bfloat16; with ``including_emulation=False``, natively
    (as ``torch.cuda.is_bf16_supported``'s argument: false on a GPU that emulates bf16 through float32)."""
    return _bound("is_bf16_supported")(including_emulation)


def is_fp16_supported() -> bool:
    """True if the selected device computes in float16."""
    return _bound("is_fp16_supported")()


def supported_dtypes() -> list[torch.dtype]:
    """Dtypes autocast can use on the selected device."""
    return _bound("supported_dtypes")()


# --------------------------------------------------------------------------- numerics


def set_deterministic(flag: bool, warn_only: bool = False) -> None:
    """Use deterministic algorithms only (and the backend's own determinism knobs)."""
    _bound("set_deterministic")(flag, warn_only)


def set_benchmark(flag: bool) -> None:
    """Let the backend auto-tune kernels (cuDNN benchmark on CUDA; a declared no-op elsewhere)."""
    _bound("set_benchmark")(flag)


def set_allow_tf32(flag: bool) -> None:
    """Allow TF32 math where the backend has it (a declared no-op elsewhere)."""
    _bound("set_allow_tf32")(flag)


# --------------------------------------------------------------------------- distributed and data


def dist_backend() -> str:
    """The ``torch.distributed`` backend for the selected device (``gloo``, ``nccl``, ``neuron``, ``xla``)."""
    return _bound("dist_backend")()


def visible_devices_env() -> str:
    """The variable restricting visible devices (``CUDA_VISIBLE_DEVICES``, ``NEURON_RT_VISIBLE_CORES``)."""
    return _bound("visible_devices_env")()


def pin_memory(tensor: torch.Tensor) -> torch.Tensor:
    """A page-locked copy of a CPU tensor (``CapabilityError`` where unsupported)."""
    return _bound("pin_memory")(tensor)


def pin_memory_device() -> str:
    """The device type a DataLoader should pin memory for."""
    return _bound("pin_memory_device")()


# The lazy versions above, kept so that runtime.reset() can restore them: one per bound or
# state name of the API table (a KeyError here means a row has no stub above).
_STUBS: dict[str, Callable[..., Any]] = {name: globals()[name] for name in (*_api.BOUND, *_api.STATE)}

# Names served from submodules on first access (keeps `import accel_abstraction` cheap).
_LAZY: dict[str, str] = _api.LAZY

#: The public API (:mod:`accel_abstraction.api`): what ``from accel_abstraction import *`` exports.
__all__ = list(_api.ALL)


#: Lazy modules that never import torch (``accel.AccelError`` stays cheap); the others import it first.
_TORCH_FREE = frozenset({"errors", "features", "hookspecs", "registry", "settings"})

__getattr__ = lazy_getattr(__name__, _LAZY, globals(), _TORCH_FREE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
