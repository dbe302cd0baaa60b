"""The neuron plugin's settings: ``[tool.accel.neuron]`` / ``ACCEL_NEURON_*``, declared once.

``emulate = true`` (``ACCEL_NEURON_EMULATE=1``) runs the neuron device as a CPU emulation. It
is never chosen on its own: without it, ``neuron`` needs AWS's TorchNeuron (``torch_neuronx``)
and visible NeuronCores.

``emulate_devices = N`` (``ACCEL_NEURON_EMULATE_DEVICES=N``) is how many devices the emulation
shows (``neuron:0`` .. ``neuron:N-1``, default 2); a Trainium instance has 2 to 128 logical
NeuronCores.

``strict = true`` (``ACCEL_NEURON_STRICT=1``) makes the emulated device refuse the ATen operators
that AWS documents as not supported (``N``) or run on the host (``CPU_FALLBACK``) under
TorchNeuron (``accel_neuron/trainium_ops.tsv``), with an error naming the operator and the source.

``emulate_memory = BYTES`` (``ACCEL_NEURON_EMULATE_MEMORY=BYTES``) is each emulated device's memory
(default 24 GiB, a Trainium2 logical NeuronCore's share of the chip's 96 GiB of HBM at LNC=2); an
allocation past it raises ``torch.OutOfMemoryError``.

``emulate_rng = "cpu"`` (``ACCEL_NEURON_EMULATE_RNG=cpu``): random ops on the emulated device draw
from the CPU default generator exactly as the same op on the CPU would (a script with dropout is
bitwise against its CPU run; for CI). Default ``"device"``: each device has its own generator,
as on real hardware. Fixed when the emulator installs (first use of the device).

``keep_tied_parameters = false`` (``ACCEL_NEURON_KEEP_TIED_PARAMETERS=0``) leaves
``torch.nn.Module._apply`` as torch ships it (e.g. when torch is patched instead).

:data:`NEURON` holds each field's type, default, meaning and limits. ``NEURON.load()`` needs no
pydantic import when nothing is set; when something is, the validating model
(:class:`NeuronSettings`) is built from this declaration.

:data:`HOT_PATH` (``ACCEL_NEURON_EMULATOR_HOT_PATH``) is the plugin's one process-level
variable, declared here as an :class:`~accel_abstraction.environment.EnvVar` row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from accel_abstraction.environment import EnvVar
from accel_abstraction.sections import Setting, declare

if TYPE_CHECKING:
    from accel_abstraction.settings import ConfigSection

    NeuronSettings: type[ConfigSection]  # the module's __getattr__ builds it

__all__ = ["HOT_PATH", "NEURON", "NeuronSettings", "PROCESS_VARIABLES"]

#: ``[tool.accel.neuron]`` / ``ACCEL_NEURON_*``.
NEURON = declare(
    "neuron",
    "ACCEL_NEURON_",
    {
        "emulate": Setting(bool, False, "Run the neuron device as a CPU emulation (CI, laptops)."),
        "emulate_devices": Setting(
            int, 2, "How many emulated devices (neuron:0 .. neuron:N-1) the emulation shows.", {"ge": 1, "le": 128}
        ),
        "strict": Setting(
            bool,
            False,
            "The emulated device refuses the ATen operators TorchNeuron documents as not supported (N) or "
            "run on the host (CPU_FALLBACK): accel_neuron/trainium_ops.tsv, each row with its source.",
        ),
        "emulate_memory": Setting(
            int,
            24 * 2**30,
            "Bytes of memory of each emulated device (default 24 GiB: a Trainium2 logical NeuronCore's HBM "
            "share); an allocation past it raises torch.OutOfMemoryError.",
            {"ge": 1},
        ),
        "emulate_rng": Setting(
            Literal["device", "cpu"],
            "device",
            "Where random ops on the emulated device draw from: 'device' (its own generators, as real "
            "hardware) or 'cpu' (the CPU default generator, exactly as the CPU op: bitwise against a CPU run).",
        ),
        "keep_tied_parameters": Setting(
            bool,
            True,
            "While neuron is selected, Module.to()/.cpu() keep tied parameters tied and lazy parameters "
            "lazy (stock torch 2.13 breaks both on every PrivateUse1 device); see the plugin README.",
        ),
    },
)

#: The plugin's process-level variable (not a setting: read once when the emulator installs,
#: to pick the per-op path); declared by the ``accel_process_variables`` hook.
HOT_PATH = EnvVar(
    "ACCEL_NEURON_EMULATOR_HOT_PATH",
    "user",
    "accel_neuron.emulator.native",
    "python: serve emulated neuron ops by the Python per-op path instead of the C++ core (a CI leg runs it).",
)
PROCESS_VARIABLES = (HOT_PATH,)


def __getattr__(name: str) -> Any:
    if name == "NeuronSettings":  # the pydantic model, built on first access (imports pydantic)
        return NEURON.model_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
