"""Entry point of the accel-neuron distribution: registers ``neuron`` and ``neuron-xla``.

While the ``neuron`` backend is the selected one (native or emulated), module conversions
keep tied and lazy parameters (:mod:`accel_abstraction.module_apply`); selecting another
backend, e.g. in ``accel.using("cpu")``, restores torch's own ``Module._apply``.
"""

from __future__ import annotations

from accel_abstraction import hookimpl
from accel_abstraction.registry import BackendSpec

from .names import NEURON, NEURON_ALIASES

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
            NEURON,
            _native,
            priority=200,
            aliases=NEURON_ALIASES,
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


@hookimpl
def accel_config_sections(register):  # type: ignore[no-untyped-def]
    from .settings import NEURON as SECTION

    register(SECTION)


@hookimpl
def accel_process_variables(register):  # type: ignore[no-untyped-def]
    from .settings import PROCESS_VARIABLES

    for row in PROCESS_VARIABLES:
        register(row)


def _keeps_tied_parameters(backend) -> bool:  # type: ignore[no-untyped-def]
    from .backend import NeuronBackend

    return isinstance(backend, NeuronBackend) and backend.neuron_settings.keep_tied_parameters


def _is_emulated(backend) -> bool:  # type: ignore[no-untyped-def]
    from .backend import NeuronBackend

    return isinstance(backend, NeuronBackend) and backend.emulated


@hookimpl
def accel_backend_selected(backend):  # type: ignore[no-untyped-def]
    from accel_abstraction import module_apply
    from accel_abstraction.integrations import huggingface

    if _keeps_tied_parameters(backend):
        module_apply.enable(OWNER)
    else:
        module_apply.disable(OWNER)
    # accelerate and transformers find native TorchNeuron themselves (torch_neuronx importable);
    # the emulated device they cannot know: point them at it (docs/integrations.md).
    if _is_emulated(backend):
        huggingface.expose(backend)
    elif huggingface.exposed() is not None and _is_emulated(huggingface.exposed()):
        huggingface.conceal()


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
    return [("module .to()", value), ("Trainium fidelity", _fidelity(backend))]


def _fidelity(backend) -> str:  # type: ignore[no-untyped-def]
    """The strict setting and the size of the Trainium table, for ``accel info``."""
    from .trainium_ops import TABLE, load

    rows = load()
    documented = f"{len(rows)} ATen operators TorchNeuron documents as N / CPU_FALLBACK ({TABLE.name})"
    settings = backend.neuron_settings
    if settings.strict:
        return f"strict ({settings.source_of('strict')}): the emulated device refuses the {documented}"
    return f"strict off: the emulated device runs the {documented}; ACCEL_NEURON_STRICT=1 refuses them, accel run --ops lists those a run uses"


@hookimpl
def accel_op_support(backend, register):  # type: ignore[no-untyped-def]
    from .backend import NeuronBackend

    if not isinstance(backend, NeuronBackend):
        return
    from .trainium_ops import op_support_rows

    for row in op_support_rows():
        register(row)
