"""Errors raised by the neuron emulator."""

from __future__ import annotations

from accel_abstraction.errors import AccelError, BackendUnavailableError


class EmulatorError(AccelError, RuntimeError):
    """Raised when the CPU emulation of the `neuron` device cannot do what was asked.

    An :class:`~accel_abstraction.errors.AccelError` (and still a ``RuntimeError``, as
    before), so ``except accel.AccelError`` catches it with the library's other errors.

    The message names the emulator limit and what to do instead; see the
    "Emulator limits" section of `plugins/neuron/README.md`.
    """


def limit(what: str, instead: str) -> EmulatorError:
    """Build an `EmulatorError` for a documented emulator limit."""
    return EmulatorError(
        f"{what} is not supported by the neuron emulator (a CPU emulation, "
        f"see 'Emulator limits' in plugins/neuron/README.md). {instead}"
    )


#: The words of c10's refusal to grow a storage it does not own ("Trying to resize storage that is not
#: resizable"): what a CPU kernel says when it must grow an output whose memory is a CPU alias of
#: neuron memory. Both per-op paths catch it and grow the neuron storage instead: the Python one
#: through :func:`refuses_to_grow`, the compiled one in ``csrc/kernels.cpp`` (``must_grow``), whose
#: literal a test keeps equal to this one.
C10_NOT_RESIZABLE = "not resizable"


def refuses_to_grow(e: BaseException) -> bool:
    """Whether `e` is c10 refusing to grow a storage that is not resizable (:data:`C10_NOT_RESIZABLE`)."""
    return isinstance(e, RuntimeError) and C10_NOT_RESIZABLE in str(e)


#: Where TorchNeuron says what it does not support (cited by :class:`NeuronUnsupportedError` messages).
TORCH_NEURON_SOURCE = (
    "AWS Neuron 2.33 docs, 'Supported PyTorch APIs and operators' (the torch-neuronx operator "
    "compatibility table, docs/torch_api_compatibility.md in aws-neuron/torch-neuronx)"
)


class NeuronUnsupportedError(EmulatorError, NotImplementedError):
    """What TorchNeuron itself does not support, refused by the emulator as the device would.

    An :class:`EmulatorError` (so an ``AccelError`` and a ``RuntimeError``) and a
    ``NotImplementedError``, the type PyTorch raises for an op a backend does not implement.
    The message names the op, the documented source, and what to do instead.
    """


def unsupported(op_name: str, what: str, instead: str) -> NeuronUnsupportedError:
    """Build a :class:`NeuronUnsupportedError` for `what` (documented unsupported) met in op `op_name`."""
    return NeuronUnsupportedError(
        f"{op_name}: {what} is not supported on the neuron device: TorchNeuron marks it N (not "
        f"supported) in {TORCH_NEURON_SOURCE}, and the emulator refuses it as the device does. {instead}"
    )


class EmulatorProbeError(EmulatorError, BackendUnavailableError):
    """A capability probe of the installed torch failed: the emulated device cannot run on it.

    Both an :class:`EmulatorError` and the
    :class:`~accel_abstraction.errors.BackendUnavailableError` that selecting an unavailable
    backend raises; ``probe`` names the probe (see :mod:`accel_neuron.emulator.compat`).
    """

    def __init__(self, probe: str, detail: str, version: str) -> None:
        BackendUnavailableError.__init__(
            self,
            "neuron",
            f"the neuron emulator's probe {probe!r} failed on torch {version}: {detail}",
            hint=tested_hint(),
        )
        self.probe = probe
        self.detail = detail


def tested_hint() -> str:
    """What to install instead: a torch release the emulator was tested on."""
    from .compat import TESTED_TORCH

    return (
        f"install a torch release the emulator was tested on ({', '.join(TESTED_TORCH)}), e.g. "
        f"pip install 'torch=={TESTED_TORCH[-1]}'; the public accel API and the native neuron "
        "backend do not depend on these hooks"
    )
