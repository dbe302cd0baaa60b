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

With the C++ core (``native.py``), ``torch.Generator(device="neuron:i")`` makes a
neuron generator that follows the same design (a CPU stream, seeds mixed alike), and
the default generator PyTorch's C++ side sees for device ``i`` wraps ``generators[i]``.
A kernel given a neuron generator runs with the CPU generator it wraps
(:func:`cpu_generator_of`).

Exact CPU randomness (``ACCEL_NEURON_EMULATE_RNG=cpu``, ``[tool.accel.neuron] emulate_rng =
"cpu"``; :func:`configure` before :func:`install`): every device's generator *is* the CPU
default generator (``torch.default_generator``), seeds are not mixed (here and in the C++
core, so ``torch.Generator(device="neuron").manual_seed(s)`` streams like a CPU generator
seeded with ``s``), and kernels without a generator argument draw from it directly. A random
op on the device then draws exactly the numbers the same op draws on the CPU, in the same
order as the CPU run interleaves them with the script's own CPU draws: a script with dropout
is bitwise against its CPU run. Not what a real device does (its generators are its own):
for CI and for bisecting, not for judging whether training is equivalent (``accel parity --seeds``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from . import native

_MASK = (1 << 64) - 1
_ADD = 0x9E3779B97F4A7C15
_MUL = 0xBF58476D1CE4E5B9  # odd, so the map is invertible modulo 2**64
_MUL_INV = pow(_MUL, -1, 1 << 64)

_DEFAULT_SEED = 67280421310721  # the default seed CUDA uses too

#: the generator of each device, by index (grown by :func:`ensure`)
generators: list[torch.Generator] = []

#: The values of the ``emulate_rng`` setting: the device's own generators, or the CPU's.
MODES = ("device", "cpu")
_shared = False  # emulate_rng = "cpu": every device's generator is torch.default_generator


def configure(mode: str) -> None:
    """``"device"`` (default: each device has its own stream) or ``"cpu"`` (the CPU default generator's)."""
    global _shared
    if mode not in MODES:
        raise ValueError(f"emulate_rng must be one of {', '.join(MODES)}, got {mode!r}")
    _shared = mode == "cpu"
    if _shared:
        generators[:] = [torch.default_generator] * len(generators)


def mode() -> str:
    return "cpu" if _shared else "device"


def _mix(seed: int) -> int:
    return seed & _MASK if _shared else ((seed + _ADD) * _MUL) & _MASK


def _unmix(value: int) -> int:
    return value if _shared else ((value * _MUL_INV) - _ADD) & _MASK


def ensure(count: int) -> None:
    """Give devices ``0 .. count-1`` a generator each, seeded with the default seed.

    With the C++ core loaded, they also become the streams of the devices' default generators.
    """
    while len(generators) < count:
        if _shared:
            generators.append(torch.default_generator)
            continue
        g = torch.Generator(device="cpu")
        g.manual_seed(_mix(_DEFAULT_SEED))
        generators.append(g)
    lib = native.python_library()
    if lib is not None:
        lib.accel_neuron_emulator_set_default_generators(generators)


def install(count: int) -> None:
    """At install: generators for devices ``0 .. count-1``, seeded as CUDA's would be by now.

    ``torch.manual_seed(s)`` called before the emulated device exists cannot reach it (there is
    no ``torch.neuron`` to seed yet); CUDA queues such a seed until it initializes. The
    emulator applies the same seed when it installs: the CPU default generator's initial seed,
    which is ``s`` after ``torch.manual_seed(s)`` and the default seed (the devices' default
    too) when nothing seeded it.
    """
    ensure(count)
    lib = native.library()
    if lib is not None:
        lib.accel_neuron_emulator_set_seed_mixing(0 if _shared else 1)
    if _shared:
        return  # the CPU generator is seeded already; seeding it again would restart its stream
    queued = torch.initial_seed()
    for index in range(count):
        manual_seed(queued, index)


def cpu_generator_of(generator: torch.Generator) -> torch.Generator:
    """The CPU generator a ``torch.Generator(device="neuron")`` draws from (what the CPU kernel gets).

    A generator on another device raises the error a CUDA kernel raises for it.
    """
    device = generator.device
    if device.type != "neuron":
        raise RuntimeError(f"Expected a 'neuron' device type for generator but found '{device.type}'")
    lib = native.python_library()
    if lib is None:  # pragma: no cover - without the C++ core no neuron generator can exist
        raise RuntimeError("neuron generators need the emulator's C++ core")
    return lib.accel_neuron_emulator_cpu_generator(generator)


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
    generators[index].set_state(state if state.is_cpu else state.detach().cpu())  # is_cpu: no torch.device made


@contextlib.contextmanager
def swapped_in(index: int = 0) -> Iterator[None]:
    """Run the body with device `index`'s state in the CPU default generator, then swap back."""
    cpu = torch.default_generator
    gen = generators[index]
    if gen is cpu:  # emulate_rng = "cpu": the op draws from the CPU stream itself
        yield
        return
    saved = cpu.get_state()
    cpu.set_state(gen.get_state())
    try:
        yield
    finally:
        gen.set_state(cpu.get_state())
        cpu.set_state(saved)


ensure(1)
