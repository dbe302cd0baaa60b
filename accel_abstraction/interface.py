"""The backend interface: one object per backend, resolved once, called directly.

:class:`Backend` carries a working default for every method, written against PyTorch's
generic device-module API (``torch.get_device_module(device_type)``: the module
``torch.<device_type>`` that every in-tree and PrivateUse1 backend provides). A plugin
subclasses it, sets :attr:`Backend.name` and :attr:`Backend.device_type`, declares its
:meth:`Backend.capabilities`, and overrides only what differs. Adding a method here later
therefore never breaks an existing plugin.

Anything a backend cannot do raises :class:`~accel_abstraction.errors.CapabilityError`
naming the backend and the feature; no method answers an unsupported request with a silent
``None`` or a zero.

Why one module of ~470 lines: it is one class, the whole contract a plugin author reads, and
each method is a few lines of default; splitting the class would split that contract.

Hot paths: the public ``accel.*`` functions are bound to this object's methods at
selection time; :meth:`Backend.hot_bindings` may hand out the underlying torch callables
directly so a call costs what the direct torch call costs.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .requirements import missing

try:
    import torch
except ModuleNotFoundError as _exc:
    raise missing(_exc, "torch", "the accelerator runtime (accel.device(), accel info, the backends)") from None

from .arguments import autocast_dtype_error, check_flag
from .errors import AccelError, CapabilityError, DeviceIndexError
from .features import Availability, Capabilities
from .scaler_defaults import SCALER
from .sections import AMP_DTYPES

if TYPE_CHECKING:
    from .sections import CoreSettings

__all__ = ["Backend", "DeviceLike"]

DeviceLike = int | str | torch.device | None
"""What a ``device`` argument accepts: an index, a string such as ``"cuda:1"``, a ``torch.device``, or ``None`` for the current device."""

_autocast = torch.autocast  # one global lookup on the per-step path instead of two

#: ``amp_dtype`` name -> dtype, for every name of :data:`.sections.AMP_DTYPES` but "auto".
_AMP_DTYPES: Mapping[str, torch.dtype] = {name: getattr(torch, name) for name in AMP_DTYPES if name != "auto"}


class Backend:
    """Base class of every backend. Subclass it in a plugin; override what differs.

    Class attributes a plugin sets:

    * :attr:`name`: the backend's registry name (``"cpu"``); :attr:`device_type`: the
      ``torch.device`` type it runs on (usually the same).
    * :attr:`dist_backend_name`: the ``torch.distributed`` collective library.
    * :attr:`visible_devices_var`: the environment variable that restricts visible
      devices, or ``None`` if the backend has none.
    * :attr:`sync_before_memory_stats`: ``True`` when the allocator is asynchronous and
      statistics are only exact after a synchronize.
    """

    name: ClassVar[str] = ""
    device_type: ClassVar[str] = ""
    dist_backend_name: ClassVar[str] = "gloo"
    visible_devices_var: ClassVar[str | None] = None
    sync_before_memory_stats: ClassVar[bool] = False

    def __init__(self, settings: CoreSettings | None = None) -> None:
        self.settings = settings
        self._module: Any = None
        self._caps: Capabilities | None = None  # what require() checks; capabilities() is fixed per process
        self._devices: dict[int | None, torch.device] = {}
        # Built on first use: a PrivateUse1 device type only parses once its backend is installed.
        self._default_device: torch.device | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} device_type={self.device_type!r}>"

    # ------------------------------------------------------------------ plumbing

    @property
    def module(self) -> Any:
        """The torch device module (``torch.get_device_module(device_type)``), resolved once."""
        if self._module is None:
            self._module = torch.get_device_module(self.device_type)
        return self._module

    def _fn(self, attr: str, feature: str | None = None) -> Callable[..., Any]:
        """The device module's function ``attr``, or CapabilityError naming ``feature``."""
        fn = getattr(self.module, attr, None)
        if fn is None:
            raise CapabilityError(self.name, feature or attr, f"torch.{self.device_type}.{attr} does not exist")
        return fn

    def require(self, feature: str) -> None:
        """Raise :class:`CapabilityError` unless :meth:`capabilities` declares ``feature``."""
        caps = self._caps
        if caps is None:
            caps = self._caps = self.capabilities()
        if not caps.supports(feature):
            raise CapabilityError(self.name, feature)

    def activate(self) -> None:
        """Prepare the backend for use; called once each time it becomes the selected one.

        The place for one-time set-up (installing an emulation, setting the autocast
        dtype). Must be idempotent. Default: nothing.
        """

    def hot_bindings(self) -> Mapping[str, Callable[..., Any]]:
        """Direct callables the public API binds in place of this object's methods.

        Map a public function name (``"synchronize"``) to a callable with the same
        signature and meaning, typically the torch function itself, so that
        ``accel.synchronize()`` costs exactly what ``torch.xxx.synchronize()`` costs.
        Default: none (the bound methods are used).
        """
        return {}

    # ------------------------------------------------------------------ identity

    def availability(self) -> Availability:
        """Whether this backend can run here; when not, the reason and a fix, in user words."""
        try:
            ok = bool(self.module.is_available())
        except (AttributeError, RuntimeError) as exc:
            return Availability.no(f"torch.{self.device_type}.is_available() failed: {exc}")
        return Availability.yes() if ok else Availability.no(f"torch.{self.device_type}.is_available() is False")

    def is_available(self) -> bool:
        """True if the backend can run in this process."""
        return self.availability().available

    def is_accelerator_available(self) -> bool:
        """True if this backend runs on an accelerator other than the host CPU and can run here.

        What ``torch.accelerator.is_available()`` answers: false for a backend whose
        :meth:`capabilities` declare ``accelerator=False`` (one running on the host CPU).
        """
        caps = self._caps
        if caps is None:
            caps = self._caps = self.capabilities()
        return caps.accelerator and self.is_available()

    def capabilities(self) -> Capabilities:
        """The features this backend supports. Plugins override this; the default declares only the basics."""
        return Capabilities()

    def device_count(self) -> int:
        """Number of devices of this backend visible to the process."""
        return int(self._fn("device_count")())

    def current_device(self) -> int:
        """Index of the current device."""
        return int(self._fn("current_device")())

    def set_device(self, device: DeviceLike) -> None:
        """Make ``device`` (index, string or ``torch.device``) the current device."""
        index = self.index_of(device)
        if index is not None:
            self._fn("set_device")(index)

    def device(self, index: DeviceLike = None) -> torch.device:
        """The ``torch.device`` for ``index`` (``None``: the backend's device without an index).

        Returned objects are cached, so calling this in a loop is cheap.
        """
        if index is None:
            dev = self._default_device
            if dev is None:
                dev = self._default_device = torch.device(self.device_type)
            return dev
        dev = self._devices.get(index)  # type: ignore[arg-type]
        if dev is None:
            i = self.index_of(index)
            dev = self.device() if i is None else torch.device(self.device_type, i)
            if isinstance(index, int):
                self._devices[index] = dev
        return dev

    def device_name(self, device: DeviceLike = None) -> str:
        """A human-readable name of the device (``"NVIDIA H100"``); the device type if unknown."""
        fn = getattr(self.module, "get_device_name", None)
        return str(fn(self.index_of(device))) if fn is not None else self.device_type

    def index_of(self, device: DeviceLike) -> int | None:
        """Normalise a ``device`` argument to an index (``None`` when it names no index).

        Raises :class:`DeviceIndexError` for a negative index or one not below
        :meth:`device_count`, and :class:`AccelError` for a device of another type.
        """
        if device is None:
            return None
        if isinstance(device, bool):
            raise AccelError(f"device must be an index, a string or a torch.device, not {device!r}")
        if isinstance(device, int):
            index: int | None = device
        else:
            try:
                dev = torch.device(device)
            except (RuntimeError, TypeError) as exc:
                raise AccelError(f"cannot parse device {device!r}: {exc}") from None
            if dev.type != self.device_type:
                raise AccelError(
                    f"device {str(dev)!r} is not a {self.device_type!r} device; the selected backend is "
                    f"{self.name!r} (use an index, or select another backend with accel.use())"
                )
            index = dev.index
        if index is not None:
            count = self.device_count()
            if index < 0 or index >= count:
                raise DeviceIndexError(
                    f"device index {index} is out of range for backend {self.name!r}, which has "
                    f"{count} device{'s' if count != 1 else ''} (valid: 0..{count - 1})"
                )
        return index

    # ------------------------------------------------------------------ execution

    def synchronize(self, device: DeviceLike = None) -> None:
        """Wait for all queued work on ``device`` (default: current device) to finish."""
        self._fn("synchronize")(self.index_of(device))

    @property
    def Stream(self) -> type:  # noqa: N802 - mirrors torch.<device>.Stream
        """The backend's stream class."""
        self.require("streams")
        return self._fn("Stream", "streams")  # type: ignore[return-value]

    @property
    def Event(self) -> type:  # noqa: N802 - mirrors torch.<device>.Event
        """The backend's event class."""
        self.require("events")
        return self._fn("Event", "events")  # type: ignore[return-value]

    def current_stream(self, device: DeviceLike = None) -> Any:
        """The stream work is currently queued on."""
        self.require("streams")
        return self._fn("current_stream", "streams")(self.index_of(device))

    def stream(self, stream: Any) -> contextlib.AbstractContextManager[Any]:
        """Context manager that queues work on ``stream`` inside the block."""
        self.require("streams")
        return self._fn("stream", "streams")(stream)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ memory

    def _mem(self, attr: str, device: DeviceLike) -> Any:
        self.require("memory_stats")
        fn = self._fn(attr, "memory_stats")
        index = self.index_of(device)
        if self.sync_before_memory_stats:
            self._fn("synchronize")(index)
        return fn(index)

    def memory_allocated(self, device: DeviceLike = None) -> int:
        """Bytes currently occupied by tensors on ``device``."""
        return int(self._mem("memory_allocated", device))

    def max_memory_allocated(self, device: DeviceLike = None) -> int:
        """Peak of :meth:`memory_allocated` since start or the last :meth:`reset_peak_memory_stats`."""
        return int(self._mem("max_memory_allocated", device))

    def memory_reserved(self, device: DeviceLike = None) -> int:
        """Bytes held by the caching allocator on ``device``."""
        return int(self._mem("memory_reserved", device))

    def max_memory_reserved(self, device: DeviceLike = None) -> int:
        """Peak of :meth:`memory_reserved`."""
        return int(self._mem("max_memory_reserved", device))

    def reset_peak_memory_stats(self, device: DeviceLike = None) -> None:
        """Reset the peaks reported by ``max_memory_*``."""
        self._mem("reset_peak_memory_stats", device)

    def empty_cache(self) -> None:
        """Release cached, unoccupied memory back to the device."""
        self.require("memory_stats")
        self._fn("empty_cache", "memory_stats")()

    def memory_stats(self, device: DeviceLike = None) -> dict[str, Any]:
        """The allocator's statistics dictionary (keys are backend-specific)."""
        return dict(self._mem("memory_stats", device))

    def mem_get_info(self, device: DeviceLike = None) -> tuple[int, int]:
        """``(free, total)`` device memory in bytes."""
        self.require("memory_stats")
        free, total = self._fn("mem_get_info", "mem_get_info")(self.index_of(device))
        return int(free), int(total)

    # ------------------------------------------------------------------ RNG

    def manual_seed(self, seed: int) -> None:
        """Seed the CPU generator and the current device's generator (not every library's)."""
        torch.default_generator.manual_seed(seed)
        self._fn("manual_seed", "rng")(seed)

    def manual_seed_all(self, seed: int) -> None:
        """Seed the CPU generator and the generators of all devices of this backend."""
        torch.default_generator.manual_seed(seed)
        self._fn("manual_seed_all", "rng")(seed)

    def seed(self) -> int:
        """Seed the CPU and device generators with a non-deterministic seed; return it."""
        value = torch.default_generator.seed()
        self._fn("manual_seed_all", "rng")(value)
        return int(value)

    def initial_seed(self) -> int:
        """The seed of the current device's generator."""
        return int(self._fn("initial_seed", "rng")())

    def get_rng_state(self, device: DeviceLike = None) -> torch.Tensor:
        """The device generator's state as a ``ByteTensor`` (restore with :meth:`set_rng_state`)."""
        index = self.index_of(device)
        fn = self._fn("get_rng_state", "rng")
        return fn() if index is None else fn(index)  # type: ignore[no-any-return]

    def set_rng_state(self, new_state: torch.Tensor, device: DeviceLike = None) -> None:
        """Restore a state from :meth:`get_rng_state` (argument names as torch's)."""
        index = self.index_of(device)
        fn = self._fn("set_rng_state", "rng")
        fn(new_state) if index is None else fn(new_state, index)

    def get_rng_state_all(self) -> list[torch.Tensor]:
        """States of every device's generator, built from the per-device call."""
        return [self.get_rng_state(i) for i in range(self.device_count())]

    def set_rng_state_all(self, new_states: Sequence[torch.Tensor]) -> None:
        """Restore states from :meth:`get_rng_state_all`."""
        for i, state in enumerate(new_states):
            self.set_rng_state(state, i)

    def fork_rng(self, devices: Sequence[DeviceLike] | None = None, enabled: bool = True) -> contextlib.AbstractContextManager[None]:
        """Context manager: CPU and device RNG states are restored when the block exits."""
        idx = None if devices is None else [self.index_of(d) or 0 for d in devices]
        return torch.random.fork_rng(devices=idx, enabled=enabled, device_type=self.device_type)  # type: ignore[return-value]

    # ------------------------------------------------------------------ AMP

    def preferred_amp_dtype(self) -> torch.dtype:
        """The mixed-precision dtype this backend trains best with (used when ``amp_dtype="auto"``)."""
        return torch.bfloat16 if self.is_bf16_supported() else torch.float16

    @property
    def default_amp_dtype(self) -> torch.dtype:
        """The autocast dtype: the configured ``amp_dtype`` or :meth:`preferred_amp_dtype`."""
        configured = getattr(self.settings, "amp_dtype", "auto")
        if configured and configured != "auto":
            return _AMP_DTYPES[configured]
        return self.preferred_amp_dtype()

    @functools.cached_property
    def _autocast_dtype(self) -> torch.dtype:
        # resolved once per backend object: autocast() runs on every training step
        return self.default_amp_dtype

    def autocast(
        self, dtype: torch.dtype | None = None, enabled: bool = True, cache_enabled: bool | None = None
    ) -> torch.autocast:
        """``torch.autocast`` on this backend's device type with the right default dtype.

        An explicit ``dtype`` must be one of :meth:`supported_dtypes` (torch itself would
        only warn and run without autocast): :class:`~accel_abstraction.errors.ArgumentValueError`
        otherwise, :class:`~accel_abstraction.errors.ArgumentTypeError` for a non-dtype.
        """
        if dtype is None:
            dtype = self._autocast_dtype
        elif dtype not in self._autocast_dtypes:
            raise autocast_dtype_error(self, dtype)
        if enabled is not True and enabled is not False:
            check_flag(enabled, "enabled", "autocast")
        return _autocast(self.device_type, dtype, enabled, cache_enabled)

    @functools.cached_property
    def _autocast_dtypes(self) -> tuple[torch.dtype, ...]:
        return tuple(self.supported_dtypes())

    def GradScaler(  # noqa: N802 - mirrors torch.amp.GradScaler
        self,
        init_scale: float = SCALER.init_scale,
        growth_factor: float = SCALER.growth_factor,
        backoff_factor: float = SCALER.backoff_factor,
        growth_interval: int = SCALER.growth_interval,
        enabled: bool | None = None,
    ) -> torch.amp.GradScaler:
        """A real ``torch.amp.GradScaler`` on this backend's device.

        ``enabled=None`` (default) enables loss scaling only when the AMP dtype is
        float16; with bfloat16 or float32 the scaler is disabled (its methods pass
        through), which is what those dtypes need.
        """
        if enabled is None:
            enabled = self.default_amp_dtype == torch.float16
        return torch.amp.GradScaler(
            self.device_type,
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )

    def supported_dtypes(self) -> list[torch.dtype]:
        """Dtypes autocast can use on this backend."""
        fn = getattr(self.module, "get_amp_supported_dtype", None)
        return list(fn()) if fn is not None else [torch.float32]

    def is_bf16_supported(self) -> bool:
        """True if bfloat16 compute is supported."""
        fn = getattr(self.module, "is_bf16_supported", None)
        return bool(fn()) if fn is not None else torch.bfloat16 in self.supported_dtypes()

    def is_bf16_native(self) -> bool:
        """True if bfloat16 compute is supported without emulation (``accel.is_bf16_supported(including_emulation=False)``).

        The default asks the device module's ``is_bf16_supported(including_emulation=False)``
        where it takes that argument (``torch.cuda``: false on a GPU that only emulates bf16
        through float32), and otherwise takes :meth:`is_bf16_supported`: a device that supports
        bfloat16 and says nothing of emulation computes it natively.
        """
        if not self.is_bf16_supported():
            return False
        fn = getattr(self.module, "is_bf16_supported", None)
        try:
            return bool(fn(including_emulation=False)) if fn is not None else True
        except TypeError:  # a device module whose is_bf16_supported() takes no such argument
            return True

    def is_fp16_supported(self) -> bool:
        """True if float16 compute is supported."""
        return torch.float16 in self.supported_dtypes()

    # ------------------------------------------------------------------ numerics knobs

    def set_deterministic(self, flag: bool, warn_only: bool = False) -> None:
        """Use deterministic algorithms only (``torch.use_deterministic_algorithms``), plus backend knobs."""
        torch.use_deterministic_algorithms(flag, warn_only=warn_only)

    def set_benchmark(self, flag: bool) -> None:
        """Let the backend auto-tune kernels for fixed shapes. A declared no-op where ``capabilities().benchmark`` is False."""

    def set_allow_tf32(self, flag: bool) -> None:
        """Allow TF32 matmuls/convolutions. A declared no-op where ``capabilities().tf32`` is False."""

    # ------------------------------------------------------------------ distributed

    def dist_backend(self) -> str:
        """The ``torch.distributed`` backend name for this device (``"gloo"``, ``"nccl"``, ...)."""
        return self.dist_backend_name

    def visible_devices_env(self) -> str:
        """The environment variable that restricts which devices a process sees."""
        if self.visible_devices_var is None:
            raise CapabilityError(self.name, "visible_devices", "this backend has no visible-devices variable")
        return self.visible_devices_var

    def before_init_process_group(self, local_rank: int) -> None:
        """Prepare the device of ``local_rank`` before ``init_process_group``.

        Default: make it the current device when the backend has that many devices.
        """
        if local_rank < self.device_count():
            self.set_device(local_rank)

    def dist_device_id(self, local_rank: int) -> torch.device | None:
        """The ``device_id`` to pass to ``init_process_group`` (binds the group to a device), or None."""
        return None

    def after_init_process_group(self, local_rank: int) -> None:
        """Finish device set-up once the process group exists. Default: nothing."""

    # ------------------------------------------------------------------ data

    def pin_memory(self, tensor: torch.Tensor) -> torch.Tensor:
        """A page-locked copy of the CPU ``tensor`` for fast, asynchronous copies to the device."""
        self.require("pinned_memory")
        return tensor.pin_memory()  # accel: ignore[ACC191]  (guarded by the capability above)

    def pin_memory_device(self) -> str:
        """The device type the DataLoader should pin memory for."""
        self.require("pinned_memory")
        return self.device_type

    # ------------------------------------------------------------------ info

    def env_info(self) -> list[tuple[str, str]]:
        """Rows for ``accel info`` about this backend (version strings, runtime settings)."""
        return []

