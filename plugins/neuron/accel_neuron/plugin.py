"""Entry point of the accel-neuron distribution: registers ``neuron`` and ``neuron-xla``.

While the ``neuron`` backend is the selected one (native or emulated), module conversions
keep tied and lazy parameters (:mod:`accel_abstraction.module_apply`); selecting another
backend, e.g. in ``accel.using("cpu")``, restores torch's own ``Module._apply``.
"""

from __future__ import annotations

from accel_abstraction import hookimpl
from accel_abstraction.registry import BackendSpec

#: Owner name under which this plugin asks for the Module._apply wrapper.
OWNER = "accel-neuron"


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


def _keeps_tied_parameters(backend) -> bool:  # type: ignore[no-untyped-def]
    from .backend import NeuronBackend

    return isinstance(backend, NeuronBackend) and backend.neuron_settings.keep_tied_parameters


@hookimpl
def accel_backend_selected(backend):  # type: ignore[no-untyped-def]
    from accel_abstraction import module_apply

    if _keeps_tied_parameters(backend):
        module_apply.enable(OWNER)
    else:
        module_apply.disable(OWNER)


@hookimpl
def accel_env_info(backend):  # type: ignore[no-untyped-def]
    from .backend import NeuronBackend

    if not isinstance(backend, NeuronBackend):
        return None
    from accel_abstraction import module_apply

    if OWNER in module_apply.owners():
        value = "keeps tied and lazy parameters (Module._apply wrapped by accel-neuron)"
    elif not backend.neuron_settings.keep_tied_parameters:
        value = "as torch ships it (ACCEL_NEURON_KEEP_TIED_PARAMETERS=0): tied parameters untie"
    else:
        value = "as torch ships it (neuron not selected yet)"
    return [("module .to()", value)]
