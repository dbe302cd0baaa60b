"""`install()`: turn PrivateUse1 into the emulated `neuron` device, once per process."""

from __future__ import annotations

import logging
import threading

import torch

from . import compat
from .errors import EmulatorError, EmulatorProbeError

log = logging.getLogger("accel_neuron.emulator")

_refused: EmulatorProbeError | None = None  # a failed self-test: the process keeps refusing


def unsupported_torch() -> EmulatorProbeError | None:
    """Why the emulator cannot run on the installed torch (the first failed probe), or ``None``.

    The private hooks are probed without side effects (:func:`.compat.hook_probes`); once
    ``install()`` has refused on a failed self-test, that refusal is the answer.
    """
    if _refused is not None:
        return _refused
    failed = compat.first_failure(compat.hook_probes())
    return None if failed is None else EmulatorProbeError(failed.name, failed.detail, torch.__version__)


_lock = threading.Lock()
_installed = False


def is_installed() -> bool:
    """Whether :func:`install` has run in this process."""
    return _installed


def _current_owner() -> str:
    return torch._C._get_privateuse1_backend_name()


def install(
    devices: int | None = None,
    source: str = "",
    memory: int | None = None,
    memory_source: str = "",
    rng_mode: str | None = None,
) -> None:
    """Install the CPU emulation of the `neuron` device in this process.

    ``devices`` is how many devices (``neuron:0`` .. ``neuron:devices-1``) it shows; by
    default ``ACCEL_NEURON_EMULATE_DEVICES`` / ``[tool.accel.neuron] emulate_devices``
    (default 2). ``source`` says where an explicit count came from, for error messages.
    ``memory`` is each device's memory in bytes (``memory_source``: where it came from); by
    default ``ACCEL_NEURON_EMULATE_MEMORY`` / ``emulate_memory`` (24 GiB, a Trainium2 logical core).
    ``rng_mode``: ``"device"`` or ``"cpu"`` (:mod:`.rng`); by default ``ACCEL_NEURON_EMULATE_RNG`` /
    ``[tool.accel.neuron] emulate_rng`` (default ``"device"``).

    Idempotent. Irreversible for the process. Raises :class:`EmulatorError`
    if another backend already owns PrivateUse1 under another name, if a
    `neuron` backend that is not this emulator (the real one) is loaded, or if
    it was installed with another device count;
    :class:`~accel_abstraction.errors.ConfigError` for an invalid configured count;
    :class:`EmulatorProbeError` (a ``BackendUnavailableError`` too) naming the capability probe
    of the installed torch that failed (:mod:`.compat`). A torch release outside
    ``compat.TESTED_TORCH`` whose probes pass runs, with one :class:`.compat.UntestedTorchWarning`.
    """
    global _installed
    with _lock:
        if _installed:
            from . import devices as _devices

            if memory is not None:  # a device's memory may change between selections (the setting's value)
                from . import memory as _memory

                _memory.configure(memory, memory_source or f"install(memory={memory})")
            if devices is not None and devices != _devices.count():
                raise EmulatorError(
                    f"the neuron emulator is already installed with {_devices.count()} devices (count from "
                    f"{_devices.source()}); {devices} were asked for{f' by {source}' if source else ''}. "
                    "The device count is fixed for the life of a process: set it before the first install."
                )
            return
        refusal = unsupported_torch()
        if refusal is not None:
            raise refusal
        owner = _current_owner()
        if owner not in ("privateuseone", "neuron"):
            raise EmulatorError(
                f"cannot emulate the neuron device: PrivateUse1 is already owned by the '{owner}' backend "
                f"(torch.{owner}); a process can hold one PrivateUse1 backend. Run the emulator in a "
                "process that does not load that backend."
            )
        if owner == "neuron" or hasattr(torch, "neuron"):
            mod = getattr(torch, "neuron", None)
            if not getattr(mod, "_is_emulated", False):
                raise EmulatorError(
                    "cannot emulate the neuron device: a real 'neuron' backend (torch_neuronx) already owns "
                    "PrivateUse1 in this process; use it, or start the process with "
                    "TORCH_DEVICE_BACKEND_AUTOLOAD=0 so it is not autoloaded, to run the emulator."
                )
        if devices is None or memory is None or rng_mode is None:
            from ..settings import NEURON

            settings = NEURON.load()
            if devices is None:
                devices = settings.emulate_devices
                source = str(settings.source_of("emulate_devices"))
            if memory is None:
                memory = settings.emulate_memory
                memory_source = str(settings.source_of("emulate_memory"))
            if rng_mode is None:
                rng_mode = settings.emulate_rng
        if devices < 1:
            raise EmulatorError(f"the neuron emulator needs at least one device, got devices={devices}")
        from . import memory as _memory

        _memory.configure(memory, memory_source or f"install(memory={memory})")
        from . import registration, rng

        rng.configure(rng_mode)

        registration.register(devices, source or f"install(devices={devices})")
        _self_test()
        from .autograd_threads import run_backward_in_caller_thread

        run_backward_in_caller_thread()
        from . import pickling

        pickling.install()
        _install_strict()
        _installed = True
    log.info("neuron device emulated on the CPU (%d devices)", devices)


def _install_strict() -> None:
    """Strict mode (``ACCEL_NEURON_STRICT=1``): refuse what TorchNeuron refuses (:mod:`.strict`)."""
    from ..settings import NEURON

    settings = NEURON.load()
    if settings.strict:
        from ..trainium_ops import load
        from .strict import install

        where = settings.source_of("strict")
        install(load(), f"strict = true from {where}" if where.kind == "file" else f"{where}")


def _self_test() -> None:
    """Run the self-test on the just-registered device; refuse for good (this process) if a probe fails."""
    global _refused
    failed = compat.first_failure(compat.self_test_probes())
    if failed is not None:
        _refused = EmulatorProbeError(failed.name, failed.detail, torch.__version__)
        raise _refused
    compat.warn_if_untested()
