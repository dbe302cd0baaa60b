"""The legacy ``neuron-xla`` backend: torch-neuronx on torch_xla (Trn1/Inf2; maintenance mode).

Lazy tensors on device ``xla``: a training step ends with :meth:`NeuronXlaBackend.mark_step`
(declared as the ``mark_step`` capability), collectives use the ``xla`` backend registered
by ``torch_xla.distributed.xla_backend``, and there are no documented memory statistics:
``memory_*`` raise ``CapabilityError`` instead of returning zeros. The code here is kept to
the documented ``torch_xla`` calls; it cannot run without the Neuron SDK.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import torch

from accel_abstraction.features import Availability, Capabilities
from accel_abstraction.interface import Backend, DeviceLike

__all__ = ["NeuronXlaBackend"]


class NeuronXlaBackend(Backend):
    """Trainium through torch_xla (``torch.device("xla")``)."""

    name = "neuron-xla"
    device_type = "xla"
    dist_backend_name = "xla"
    visible_devices_var = "NEURON_RT_VISIBLE_CORES"

    def availability(self) -> Availability:
        missing = [m for m in ("torch_xla", "torch_neuronx") if importlib.util.find_spec(m) is None]
        if missing:
            return Availability.no(
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed (legacy XLA-based Neuron)",
                hint="install torch-neuronx and torch-xla from the AWS Neuron pip repository on a Trn1/Inf2 "
                "instance, or use the native `neuron` backend",
            )
        return Availability.yes()

    def capabilities(self) -> Capabilities:
        return Capabilities(
            bf16=True,
            fp16=False,
            memory_stats=False,
            visible_devices=True,
            distributed=True,
            compile_backend="openxla",
            extras={"mark_step": True},
        )

    @staticmethod
    def _xm() -> Any:
        import torch_xla.core.xla_model as xm

        return xm

    def activate(self) -> None:
        import os

        os.environ.setdefault("PJRT_DEVICE", "NEURON")

    def device_count(self) -> int:
        import torch_xla.runtime as xr

        return int(xr.addressable_runtime_device_count())

    def current_device(self) -> int:
        return int(self._xm().xla_device().index or 0)

    def set_device(self, device: DeviceLike) -> None:
        self.index_of(device)  # one XLA device per process under torchrun

    def synchronize(self, device: DeviceLike = None) -> None:
        self._xm().wait_device_ops()

    def mark_step(self) -> None:
        """Cut the lazy graph and run it: call once per training step."""
        self._xm().mark_step()

    def manual_seed(self, seed: int) -> None:
        torch.default_generator.manual_seed(seed)
        self._xm().set_rng_state(seed)

    manual_seed_all = manual_seed

    def initial_seed(self) -> int:
        return int(self._xm().get_rng_state())

    def preferred_amp_dtype(self) -> torch.dtype:
        return torch.bfloat16

    def is_bf16_supported(self) -> bool:
        return True

    def supported_dtypes(self) -> list[torch.dtype]:
        return [torch.float32, torch.bfloat16]

    def before_init_process_group(self, local_rank: int) -> None:
        import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" collective backend)
