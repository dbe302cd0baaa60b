"""`install()`: turn PrivateUse1 into the emulated `neuron` device, once per process."""

from __future__ import annotations

import logging
import threading

import torch

from .errors import EmulatorError

log = logging.getLogger("accel_neuron.emulator")

#: torch minor versions whose private hooks the emulator was written and tested against
#: (``torch.utils.backend_registration``, ``torch._C._acc``, storage construction from a data
#: pointer, the PrivateUse1 fallback). Add a version only after the emulator's suite passes on it.
EMULATED_TORCH: tuple[str, ...] = ("2.13",)


def unsupported_torch(version: str | None = None) -> str | None:
    """Why the emulator cannot run on torch ``version`` (default: the installed one), or ``None``."""
    version = version or torch.__version__
    minor = ".".join(version.split("+")[0].split(".")[:2])
    if minor in EMULATED_TORCH:
        return None
    return (
        f"the neuron emulator relies on private PyTorch hooks checked against torch "
        f"{' and '.join(EMULATED_TORCH)} only, and torch {version} is installed; install "
        f"torch=={EMULATED_TORCH[-1]}.* for the emulated device (the public accel API and the native "
        f"neuron backend do not depend on these hooks)"
    )
_lock = threading.Lock()
_installed = False


def is_installed() -> bool:
    """Whether :func:`install` has run in this process."""
    return _installed


def _current_owner() -> str:
    return torch._C._get_privateuse1_backend_name()


def install(devices: int | None = None, source: str = "") -> None:
    """Install the CPU emulation of the `neuron` device in this process.

    ``devices`` is how many devices (``neuron:0`` .. ``neuron:devices-1``) it shows; by
    default ``ACCEL_NEURON_EMULATE_DEVICES`` / ``[tool.accel.neuron] emulate_devices``
    (default 2). ``source`` says where an explicit count came from, for error messages.

    Idempotent. Irreversible for the process. Raises :class:`EmulatorError`
    if another backend already owns PrivateUse1 under another name, if a
    `neuron` backend that is not this emulator (the real one) is loaded, or if
    it was installed with another device count;
    :class:`~accel_abstraction.errors.ConfigError` for an invalid configured count.
    """
    global _installed
    with _lock:
        if _installed:
            from . import devices as _devices

            if devices is not None and devices != _devices.count():
                raise EmulatorError(
                    f"the neuron emulator is already installed with {_devices.count()} devices (count from "
                    f"{_devices.source()}); {devices} were asked for{f' by {source}' if source else ''}. "
                    "The device count is fixed for the life of a process: set it before the first install."
                )
            return
        reason = unsupported_torch()
        if reason is not None:
            raise EmulatorError(reason)
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
        if devices is None:
            from ..settings import NEURON

            settings = NEURON.load()
            devices = settings.emulate_devices
            source = str(settings.source_of("emulate_devices"))
        elif devices < 1:
            raise EmulatorError(f"the neuron emulator needs at least one device, got devices={devices}")
        from . import registration

        registration.register(devices, source or f"install(devices={devices})")
        from .autograd_threads import run_backward_in_caller_thread

        run_backward_in_caller_thread()
        from . import pickling

        pickling.install()
        _installed = True
    log.info("neuron device emulated on the CPU (%d devices)", devices)
