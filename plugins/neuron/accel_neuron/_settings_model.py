"""Validation of ``[tool.accel.neuron]`` / ``ACCEL_NEURON_*`` (pydantic); declared in :mod:`.settings`."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from accel_abstraction.settings import ConfigSection, section_config

from .settings import NEURON

__all__ = ["NeuronSettings"]


class NeuronSettings(ConfigSection):
    """How the ``neuron`` backend runs.

    ``emulate = true`` (``ACCEL_NEURON_EMULATE=1``) runs the neuron device as a CPU
    emulation. It is never chosen on its own: without it, ``neuron`` needs AWS's
    TorchNeuron (``torch_neuronx``) and visible NeuronCores.

    ``emulate_devices = N`` (``ACCEL_NEURON_EMULATE_DEVICES=N``) is how many devices the
    emulation shows (``neuron:0`` .. ``neuron:N-1``, default 2); a Trainium instance has 2
    to 128 logical NeuronCores.

    ``keep_tied_parameters = false`` (``ACCEL_NEURON_KEEP_TIED_PARAMETERS=0``) leaves
    ``torch.nn.Module._apply`` as torch ships it (e.g. when torch is patched instead).
    """

    model_config = section_config(NEURON.env_prefix)
    section: ClassVar[str] = NEURON.section

    emulate: bool = Field(NEURON.defaults["emulate"], description="Run the neuron device as a CPU emulation (CI, laptops).")
    emulate_devices: int = Field(
        NEURON.defaults["emulate_devices"],
        ge=1,
        le=128,
        description="How many emulated devices (neuron:0 .. neuron:N-1) the emulation shows.",
    )
    keep_tied_parameters: bool = Field(
        NEURON.defaults["keep_tied_parameters"],
        description=(
            "While neuron is selected, Module.to()/.cpu() keep tied parameters tied and lazy parameters "
            "lazy (stock torch 2.13 breaks both on every PrivateUse1 device); see the plugin README."
        ),
    )
