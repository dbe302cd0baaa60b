"""Entry point of the accel-neuron distribution: registers ``neuron`` and ``neuron-xla``."""

from __future__ import annotations

from accel_abstraction import hookimpl
from accel_abstraction.registry import BackendSpec


def _native(settings):  # type: ignore[no-untyped-def]
    from .backend import NeuronBackend

    return NeuronBackend(settings)


def _xla(settings):  # type: ignore[no-untyped-def]
    from .xla_backend import NeuronXlaBackend

    return NeuronXlaBackend(settings)


@hookimpl
def accel_register_backends(register):  # type: ignore[no-untyped-def]
    register(
        BackendSpec(
            "neuron",
            _native,
            priority=200,
            aliases=("trainium", "trn"),
            description="AWS Trainium via TorchNeuron (native); CPU emulation with ACCEL_NEURON_EMULATE=1",
        )
    )
    register(
        BackendSpec(
            "neuron-xla",
            _xla,
            priority=150,
            aliases=("trainium-xla",),
            description="AWS Trainium/Inferentia via the legacy torch-neuronx on torch_xla",
        )
    )
