"""The emulated device's random number generator.

The device has its own generator, separate from the CPU default generator, as
CUDA has. It is a CPU ``torch.Generator`` (so kernels draw exactly the numbers
the CPU would draw from the same state), seeded through an invertible 64-bit
mix of the user's seed: after ``torch.manual_seed(s)`` the device stream
differs from the CPU stream, yet is reproducible, and ``initial_seed()`` still
returns ``s``. To make a neuron computation draw the same numbers as a CPU
one, copy the state: ``torch.neuron.set_rng_state(torch.get_rng_state())``.

Kernels with a ``Generator?`` argument get this generator when the caller
passed none; random kernels without one (``native_dropout``, ...) run with its
state swapped into the CPU default generator (:func:`swapped_in`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

_MASK = (1 << 64) - 1
_ADD = 0x9E3779B97F4A7C15
_MUL = 0xBF58476D1CE4E5B9  # odd, so the map is invertible modulo 2**64
_MUL_INV = pow(_MUL, -1, 1 << 64)

generator = torch.Generator(device="cpu")


def _mix(seed: int) -> int:
    return ((seed + _ADD) * _MUL) & _MASK


def _unmix(value: int) -> int:
    return ((value * _MUL_INV) - _ADD) & _MASK


def manual_seed(seed: int) -> None:
    """Seed the device generator with `seed`."""
    generator.manual_seed(_mix(int(seed) & _MASK))


def seed() -> int:
    """Seed the device generator with a non-deterministic number and return it."""
    value = torch.Generator().seed()
    manual_seed(value)
    return value


def initial_seed() -> int:
    """The seed last given to :func:`manual_seed` (or chosen by :func:`seed`)."""
    return _unmix(generator.initial_seed())


def get_state() -> torch.Tensor:
    """The generator state as a CPU ``torch.uint8`` tensor."""
    return generator.get_state()


def set_state(state: torch.Tensor) -> None:
    """Restore a state returned by :func:`get_state` (or by ``torch.get_rng_state()``)."""
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
        raise TypeError(f"expected a torch.uint8 tensor from get_rng_state(), got {state!r:.80}")
    generator.set_state(state.detach().cpu() if state.device.type != "cpu" else state)


@contextlib.contextmanager
def swapped_in() -> Iterator[None]:
    """Run the body with the device state in the CPU default generator, then swap back."""
    cpu = torch.default_generator
    saved = cpu.get_state()
    cpu.set_state(generator.get_state())
    try:
        yield
    finally:
        generator.set_state(cpu.get_state())
        cpu.set_state(saved)


manual_seed(67280421310721)  # the default seed CUDA uses too
