"""The ``neuron`` backend: AWS Trainium through TorchNeuron's native PyTorch device.

TorchNeuron is a PrivateUse1 backend named ``neuron`` whose device module is
``torch.neuron``. Almost everything is the base class's generic code run against that
module; this class adds what the documentation asks for:

* memory statistics are read after ``torch.neuron.synchronize()`` (asynchronous allocator)
  and through the memory functions, never raw ``memory_stats()`` keys;
* autocast always passes ``dtype`` (the PrivateUse1 default would be float16; bf16 is
  the native training type), so ``GradScaler()`` comes out disabled;
* ``get_rng_state_all`` is built from the per-device calls (TorchNeuron has none);
* distributed uses the ``neuron`` collective library; the runtime must not be touched
  before ``init_process_group``, so the only preparation is ``NEURON_RT_VISIBLE_CORES``.

With ``emulate`` configured the same class runs on the CPU emulation
(:mod:`accel_neuron.emulator`), which provides the same ``torch.neuron`` surface: the
code path CI exercises is this native one.
"""

from __future__ import annotations

import importlib.util
import os
import traceback
from typing import TYPE_CHECKING

import torch

from accel_abstraction.features import Availability, Capabilities
from accel_abstraction.interface import Backend

from .settings import NEURON

if TYPE_CHECKING:
    from accel_abstraction.sections import CoreSettings

    from .settings import NeuronSettings

__all__ = ["NeuronBackend", "SUPPORTED_TORCH"]

#: torch minor versions TorchNeuron supports (Neuron 2.33 documentation).
SUPPORTED_TORCH = ("2.13", "2.14")

_NOT_ON_PYPI = (
    "TorchNeuron is not on PyPI: install the AWS Neuron SDK on a Trn2/Trn3 instance (see the AWS Neuron "
    "documentation, 'Set up TorchNeuron'), or set ACCEL_NEURON_EMULATE=1 to run on the CPU emulation"
)


class NeuronBackend(Backend):
    """Trainium NeuronCores (``torch.device("neuron", i)``): native, or emulated on the CPU."""

    name = "neuron"
    device_type = "neuron"
    dist_backend_name = "neuron"
    visible_devices_var = "NEURON_RT_VISIBLE_CORES"
    sync_before_memory_stats = True

    def __init__(self, settings: CoreSettings | None = None, neuron: NeuronSettings | None = None) -> None:
        super().__init__(settings)
        self.neuron_settings = neuron if neuron is not None else NEURON.load()

    @property
    def emulated(self) -> bool:
        """True when running on the CPU emulation of the device."""
        return bool(self.neuron_settings.emulate)

    # ---------------------------------------------------------------- availability

    def availability(self) -> Availability:
        if self.emulated:
            return self._emulator_availability()
        return self._native_availability()

    def _emulator_availability(self) -> Availability:
        from .emulator.errors import tested_hint
        from .emulator.install import unsupported_torch

        refusal = unsupported_torch()
        if refusal is not None:
            return Availability.no(refusal.reason, hint=tested_hint())
        owner = torch._C._get_privateuse1_backend_name()
        if owner not in ("privateuseone", "neuron"):
            return Availability.no(
                f"the emulator needs PyTorch's PrivateUse1 slot, which the {owner!r} backend already owns "
                f"in this process",
                hint="run the emulated neuron backend in a process that does not load that backend",
            )
        real = getattr(torch, "neuron", None)
        if owner == "neuron" and real is not None and not getattr(real, "_is_emulated", False):
            return Availability.no(
                "ACCEL_NEURON_EMULATE is set but the real TorchNeuron backend is loaded in this process",
                hint="unset ACCEL_NEURON_EMULATE to use the hardware",
            )
        return Availability.yes()

    def _native_availability(self) -> Availability:
        version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
        if importlib.util.find_spec("torch_neuronx") is None:
            return Availability.no("torch_neuronx (AWS TorchNeuron) is not installed", hint=_NOT_ON_PYPI)
        if version not in SUPPORTED_TORCH:
            return Availability.no(
                f"TorchNeuron supports torch {' and '.join(SUPPORTED_TORCH)}, but torch {torch.__version__} "
                f"is installed",
                hint=f"install torch=={SUPPORTED_TORCH[0]}.* in this environment",
            )
        try:
            import torch_neuronx  # noqa: F401  (registers the neuron device)

            count = int(torch.neuron.device_count())  # type: ignore[attr-defined]
        except Exception as exc:  # report the runtime's own words
            return Availability.no(
                f"torch_neuronx failed to start: {type(exc).__name__}: {exc}",
                hint="check the Neuron driver (neuron-ls) and the runtime logs",
                traceback=traceback.format_exc(),
            )
        if count == 0:
            visible = os.environ.get(self.visible_devices_var or "")
            return Availability.no(
                "no NeuronCore is visible to this process"
                + (f" (NEURON_RT_VISIBLE_CORES={visible!r})" if visible is not None else ""),
                hint="check `neuron-ls`, and that no other process holds the cores",
            )
        return Availability.yes()

    def activate(self) -> None:
        if self.emulated:
            from . import emulator
            from .emulated_dist import register_emulated_process_group

            ns = self.neuron_settings
            emulator.install(
                ns.emulate_devices,
                source=str(ns.source_of("emulate_devices")),
                memory=ns.emulate_memory,
                memory_source=str(ns.source_of("emulate_memory")),
                rng_mode=ns.emulate_rng,
            )
            register_emulated_process_group()
        else:
            import torch_neuronx  # noqa: F401

    # ---------------------------------------------------------------- declarations

    def capabilities(self) -> Capabilities:
        return Capabilities(
            streams=True,
            events=True,
            memory_stats=True,
            fp16=True,
            bf16=True,
            fp8=False,
            graphs=False,
            pinned_memory=not self.emulated,
            deterministic=True,
            benchmark=False,
            tf32=False,
            distributed=torch.distributed.is_available(),
            visible_devices=True,
            compile_backend="neuron",  # emulated: the emulator's backend of that name (emulator/compile.py)
            extras={"emulated": self.emulated},
        )

    def preferred_amp_dtype(self) -> torch.dtype:
        return torch.bfloat16

    def is_bf16_supported(self) -> bool:
        return True

    # ---------------------------------------------------------------- distributed

    def before_init_process_group(self, local_rank: int) -> None:
        """Give the rank its NeuronCore without touching the runtime (it must start after init).

        Emulated: local rank r uses ``neuron:r`` (when the emulator has that many devices).
        """
        if self.emulated:
            from . import emulator

            if emulator.is_installed():  # activate() installs it; nothing to choose from before
                super().before_init_process_group(local_rank)
        else:
            os.environ.setdefault("NEURON_RT_VISIBLE_CORES", str(local_rank))

    # ---------------------------------------------------------------- info

    def device_name(self, device: object = None) -> str:
        index = self.index_of(device)  # type: ignore[arg-type]
        props = torch.neuron.get_device_properties(index or 0)  # type: ignore[attr-defined]
        kind = " (emulated on the CPU)" if self.emulated else ""
        return f"{props.name}, {props.total_memory / 2**30:.0f} GiB{kind}"

    def env_info(self) -> list[tuple[str, str]]:
        rows = [("neuron mode", "emulated on the CPU" if self.emulated else "native (TorchNeuron)")]
        if not self.emulated:
            import torch_neuronx

            rows.append(("torch_neuronx", str(getattr(torch_neuronx, "__version__", "unknown"))))
        else:
            rows += _emulator_rows()
        for var in ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", "NEURON_RT_STOCHASTIC_ROUNDING_EN"):
            if var in os.environ:
                rows.append((var, os.environ[var]))
        return rows


def _emulator_rows() -> list[tuple[str, str]]:
    """``accel info`` rows of the emulated device: the torch release, whether tested, the probes."""
    from .emulator import compat
    from .emulator.install import is_installed, unsupported_torch

    status = compat.release_status()
    rows = [
        ("torch release", torch.__version__),
        (
            "torch tested with the emulator",
            "yes" if status == "tested" else f"no ({status}; tested: {', '.join(compat.TESTED_TORCH)})",
        ),
    ]
    probes = compat.hook_probes()
    failed = [p for p in probes if not p.ok]
    rows.append(
        (
            "emulator hook probes",
            f"{len(probes) - len(failed)}/{len(probes)} pass"
            + "".join(f"; {p.name}: {p.detail}" for p in failed),
        )
    )
    refusal = unsupported_torch()
    if is_installed():
        rows.append(("emulator self-test", f"{len(compat.SELF_TEST)}/{len(compat.SELF_TEST)} pass"))
    elif refusal is not None and refusal.probe in compat.SELF_TEST:
        rows.append(("emulator self-test", f"failed: {refusal.probe}: {refusal.detail}"))
    return rows
