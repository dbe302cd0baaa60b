"""Errors raised by the neuron emulator."""

from __future__ import annotations

from accel_abstraction.errors import AccelError


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
        f"{what} is not supported by the neuron emulator (pure-Python CPU emulation, "
        f"see 'Emulator limits' in plugins/neuron/README.md). {instead}"
    )
