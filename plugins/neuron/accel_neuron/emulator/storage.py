"""Neuron storages and the tensors that view them: which implementation keeps them, chosen once.

A neuron tensor is a real PrivateUse1 tensor whose storage points at CPU memory. Kernels never
touch its data directly: they get a zero-copy CPU view over a *non-resizable* CPU storage that
aliases the same memory, and map CPU results back to neuron tensors over the same memory. Two
implementations keep the bookkeeping (the CPU alias, memory statistics, the data-pointer map):

* ``native``: the C++ core (``csrc/allocator.cpp``, :mod:`.compiled_storage`), with the
  compiled per-op path, so storages made by the compiled and by the Python kernel are one kind;
* ``python``: :mod:`.python_storage`, when the compiled path is off
  (``ACCEL_NEURON_EMULATOR_HOT_PATH=python``, or no C++ compiler).

Each is a :class:`StoragePath`. ``install()`` selects one (:func:`select`, once, before any
neuron tensor exists) and every caller reaches it through :func:`active`: there is no
module-level ``to_neuron`` to import, so no caller can keep the other implementation (as a
``from .storage import to_neuron`` made before a mode switch once did). A hot path reads the
functions it needs once, after install (``OpInfo`` does, per op).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .errors import EmulatorError

_CPU_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_redispatch_set = torch.ops.aten.set_.source_Storage_storage_offset._handle.redispatch_boxed


@dataclass(frozen=True, slots=True)
class StoragePath:
    """One implementation of the neuron storage bookkeeping: the functions every caller uses.

    ``to_neuron(c, index)``: a neuron tensor over the memory of CPU tensor `c` (zero-copy;
    memory that already backs a neuron storage stays on that storage's device, new memory
    becomes a storage on device `index`). ``cpu_view(t)``: a zero-copy CPU tensor over neuron
    tensor `t` (possibly cached: do not change its metadata). ``fresh_cpu_view(t)``: the same, a
    new tensor the caller may re-point or resize. ``neuron_storage_for(cpu_storage, index=0)``:
    the neuron storage over that CPU memory, made on device `index` if there is none.
    ``resize_storage(st, nbytes)``: ``UntypedStorage.resize_`` for a neuron storage (new
    memory, old bytes kept, same storage object). ``storage_slice(st, start, nbytes)``:
    ``st[start:start + nbytes]``, a new neuron storage sharing those bytes (not an allocation:
    it keeps `st` alive, as PyTorch's storage slice keeps the storage it slices).
    ``swap_data_ptr(a, b)``: ``UntypedStorage._swap_data_ptr_`` for neuron storages (the memory
    behind `a` and `b` changes places, and so does everything that reads or frees it).
    ``lazy_clone(t)``: ``Tensor._lazy_clone`` of neuron tensor `t` (same geometry and values;
    c10 copy-on-write where the path can make it, see each path). ``new_storage(nbytes, index)``:
    ``UntypedStorage(nbytes, device=...)`` in one call, where the path has it (None: limits.py wraps a
    new CPU storage with ``neuron_storage_for``). ``clone_storage(st)``: ``st.clone()`` (what
    ``copy.deepcopy`` of a neuron tensor calls) in one call, where the path has it (None: PyTorch's
    clone, a new storage then ``copy_``). ``share_version(t, src)``: CPU tensor `t` counts its
    versions with `src`'s counter from then on, where the path has it (None: the recurrent islands
    keep their CPU graph behind an autograd Function instead, :mod:`.cpu_islands`).
    """

    name: str
    to_neuron: Callable[[torch.Tensor, int], torch.Tensor]
    cpu_view: Callable[[torch.Tensor], torch.Tensor]
    fresh_cpu_view: Callable[[torch.Tensor], torch.Tensor]
    neuron_storage_for: Callable[..., torch.UntypedStorage]
    resize_storage: Callable[[torch.UntypedStorage, int], None]
    storage_slice: Callable[[torch.UntypedStorage, int, int], torch.UntypedStorage]
    swap_data_ptr: Callable[[torch.UntypedStorage, torch.UntypedStorage], None]
    lazy_clone: Callable[[torch.Tensor], torch.Tensor]
    new_storage: Callable[[int, int], torch.UntypedStorage] | None = None
    clone_storage: Callable[[torch.UntypedStorage], torch.UntypedStorage] | None = None
    share_version: Callable[[torch.Tensor, torch.Tensor], None] | None = None


_active: StoragePath | None = None


def select(path: StoragePath) -> None:
    """Make `path` this process's storage path (``install()`` does, once, before any neuron tensor).

    Selecting the path already selected again changes nothing; another one raises
    :class:`EmulatorError`: storages made by one implementation are not the other's kind.
    """
    global _active
    if _active is not None and _active is not path:
        raise EmulatorError(
            f"the neuron emulator's storage path is already {_active.name!r}; {path.name!r} was asked "
            "for. It is chosen once per process, at install (ACCEL_NEURON_EMULATOR_HOT_PATH): set "
            "that before the first install instead of switching afterwards."
        )
    _active = path


def active() -> StoragePath:
    """The storage path ``install()`` selected; :class:`EmulatorError` before install."""
    if _active is None:
        raise EmulatorError(
            "no neuron storage path is selected: the neuron emulator is not installed in this "
            "process; call accel_neuron.emulator.install() (or select the 'neuron' backend) first"
        )
    return _active


def set_geometry(t: torch.Tensor, st: torch.UntypedStorage, offset: int, size, stride) -> torch.Tensor:
    """Point neuron tensor `t` at neuron storage `st` with the given geometry (CPU redispatch of set_).

    The same on both paths: PyTorch's own ``set_`` kernel, below the PrivateUse1 key.
    """
    _redispatch_set(_CPU_KEYSET, t, st, offset, size, stride)
    return t
