"""The neuron plugin's settings: ``[tool.accel.neuron]`` / ``ACCEL_NEURON_*``.

:data:`NEURON` declares the section (its defaults are written only there);
:class:`NeuronSettings` (pydantic, in :mod:`._settings_model`) validates it when anything
sets a value. ``NEURON.load()`` needs no pydantic import when nothing is set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from accel_abstraction.sections import SectionSpec

if TYPE_CHECKING:
    from ._settings_model import NeuronSettings

__all__ = ["NEURON", "NeuronSettings"]

#: ``[tool.accel.neuron]`` / ``ACCEL_NEURON_*``.
NEURON = SectionSpec(
    section="neuron",
    env_prefix="ACCEL_NEURON_",
    defaults={"emulate": False, "emulate_devices": 2, "keep_tied_parameters": True},
    model="accel_neuron._settings_model:NeuronSettings",
)


def __getattr__(name: str) -> Any:
    if name == "NeuronSettings":
        from ._settings_model import NeuronSettings

        return NeuronSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
