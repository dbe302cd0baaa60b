"""The emulated devices' random number generators.

Each device has its own generator, separate from the CPU default generator and
from the other devices', as CUDA has. It is a CPU ``torch.Generator`` (so kernels draw exactly the numbers
the CPU would draw from the same state), seeded through an invertible 64-bit
mix of the user's seed: after ``torch.manual_seed(s)`` the device stream
differs from the CPU stream, yet is reproducible, and ``initial_seed()`` still
returns ``s``. To make a neuron computation draw the same numbers as a CPU
one, copy the state: ``torch.neuron.set_rng_state(torch.get_rng_state())``.

Kernels with a ``Generator?`` argument get the generator of the device they run
on when the caller passed none; random kernels without one (``native_dropout``,
...) run with its state swapped into the CPU default generator (:func:`swapped_in`).
Every function takes the device index; ``manual_seed_all``-style seeding is the
device module's loop over them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

_MASK = (1 << 64) - 1
_ADD = 0x9E3779B97F4A7C15
_MUL = 0xBF58476D1CE4E5B9  # odd, so the map is invertible modulo 2**64
_MUL_INV = pow(_MUL, -1, 1 << 64)

_DEFAULT_SEED = 67280421310721  # the default seed CUDA uses too

#: the generator of each device, by index (grown by :func:`ensure`)
generators: list[torch.Generator] = []


def _mix(seed: int) -> int:
    return ((seed + _ADD) * _MUL) & _MASK


def _unmix(value: int) -> int:
    return ((value * _MUL_INV) - _ADD) & _MASK


def ensure(count: int) -> None:
    """Give devices ``0 .. count-1`` a generator each, seeded with the default seed."""
    while len(generators) < count:
        g = torch.Generator(device="cpu")
        g.manual_seed(_mix(_DEFAULT_SEED))
        generators.append(g)


def manual_seed(seed: int, index: int = 0) -> None:
    """Seed the generator of device `index` with `seed`."""
    generators[index].manual_seed(_mix(int(seed) & _MASK))


def seed(index: int = 0) -> int:
    """Seed the generator of device `index` with a non-deterministic number and return it."""
    value = torch.Generator().seed()
    manual_seed(value, index)
    return value


def initial_seed(index: int = 0) -> int:
    """The seed last given to :func:`manual_seed` (or chosen by :func:`seed`) for device `index`."""
    return _unmix(generators[index].initial_seed())


def get_state(index: int = 0) -> torch.Tensor:
    """The generator state of device `index` as a CPU ``torch.uint8`` tensor."""
    return generators[index].get_state()


def set_state(state: torch.Tensor, index: int = 0) -> None:
    """Restore a state returned by :func:`get_state` (or by ``torch.get_rng_state()``)."""
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
        raise TypeError(f"expected a torch.uint8 tensor from get_rng_state(), got {state!r:.80}")
    generators[index].set_state(state.detach().cpu() if state.device.type != "cpu" else state)


@contextlib.contextmanager
def swapped_in(index: int = 0) -> Iterator[None]:
    """Run the body with device `index`'s state in the CPU default generator, then swap back."""
    cpu = torch.default_generator
    gen = generators[index]
    saved = cpu.get_state()
    cpu.set_state(gen.get_state())
    try:
        yield
    finally:
        gen.set_state(cpu.get_state())
        cpu.set_state(saved)


ensure(1)
