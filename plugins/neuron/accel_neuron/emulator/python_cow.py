"""Copy-on-write neuron tensors on the Python storage path (``Tensor._lazy_clone``).

The C++ core makes the storages c10 copy-on-write (``accel_neuron_emu::python_lazy_clone``,
``csrc/cow.cpp``): both share one c10 ``COWDeleterContext`` and get its materializer, which c10
runs on a storage's first mutable access (the Python kernel asks for it before lending a CPU view of a
written argument: :func:`.written_args.materialize`). This path's storages hold their memory in
Python (:mod:`.python_storage`: the storage object's CPU alias ``_emu_cpu``), so the rest is here:

* the clone's storage object shares the original's CPU alias (the memory lives while either does);
* the allocation is counted as freed when the last storage sharing it goes (:class:`_Shared`, one
  per shared memory, held by each sharing storage), not when the original does;
* the materializer calls :func:`check_room` before its reference gives up its count (an out of
  memory then leaves the storage copy-on-write) and, when it was not the last reference,
  :func:`own_memory`: the storage gets a counted copy of the bytes in memory of its own.

Without the C++ core (no compiler) ``_lazy_clone`` copies at once (:func:`.python_storage.copy_at_once`).
"""

from __future__ import annotations

import weakref

import torch

from . import memory, native, python_storage

_CPU = torch.device("cpu")
_library: list[torch.library.Library] = []  # kept alive: dropping a Library unregisters its kernels


class _Shared:
    """The memory a group of copy-on-write storages shares: counted as freed when its last holder goes."""

    __slots__ = ("__weakref__", "ref")

    def __init__(self, nbytes: int, index: int) -> None:
        self.ref = weakref.ref(self, lambda _ref: memory.free(nbytes, index))


def _share(st: torch.UntypedStorage) -> _Shared:
    """The :class:`_Shared` of `st`'s memory; the first time, the allocation's count moves from `st` to it."""
    shared = getattr(st, "_emu_shared", None)
    if shared is None:
        track = getattr(st, "_emu_track", None)
        nbytes, index = (track[0][1], track[0][2]) if track is not None else (0, st._emu_index)
        if track is not None:
            track[0][1] = 0  # counted as freed with the last holder, not with `st`
        shared = st._emu_shared = _Shared(nbytes, index)
        if not nbytes:
            shared.ref = None  # nothing counted: nothing to uncount
    return shared


def lazy_clone(t: torch.Tensor) -> torch.Tensor:
    """``Tensor._lazy_clone`` on this path: c10 copy-on-write with the C++ core, else a copy at once."""
    st = t.untyped_storage()
    if not native.load() or not st.nbytes() or not hasattr(st, "_emu_cpu"):
        return python_storage.copy_at_once(t)
    shared = _share(st)
    clone = torch.ops.accel_neuron_emu.python_lazy_clone(t)
    cst = clone.untyped_storage()
    cst._emu_cpu = st._emu_cpu  # the shared memory's CPU alias (it holds the memory)
    cst._emu_views = {}
    cst._emu_index = st._emu_index
    cst._emu_shared = shared
    return clone


def check_room(holder: torch.Tensor) -> int:
    """Before a storage gives up its reference: room on its device for a copy, or ``torch.OutOfMemoryError``."""
    st = holder.untyped_storage()
    memory.check(st.nbytes(), st._emu_index)
    return 0


def own_memory(holder: torch.Tensor) -> int:
    """A copy-on-write storage that gave up its reference (not the last): a counted copy of its bytes.

    Its CPU alias, view cache, statistics and data-pointer map entry move to the copy; it leaves the
    shared memory's group. Returns the copy's address, which the C++ core points the storage at.
    """
    st = holder.untyped_storage()
    nbytes, index = st.nbytes(), st._emu_index
    owner = torch._C.StorageBase.__new__(torch.UntypedStorage, nbytes)  # CPU memory, unpatched constructor
    owner.copy_(st._emu_cpu)  # the shared bytes, kept by the reference the core still holds
    ptr = owner.data_ptr()
    alias = torch._C._construct_storage_from_data_pointer(ptr, _CPU, nbytes)
    alias._emu_owner = owner
    track = getattr(st, "_emu_track", None)
    if track is not None:
        old_ptr, _, _ = track[0]
        if python_storage._by_ptr.get(old_ptr) is track[1]:
            del python_storage._by_ptr[old_ptr]  # the shared memory is no longer this storage's
        track[0][:] = [0, 0, index]
    st._emu_cpu = alias
    st._emu_views = {}
    del st._emu_shared
    python_storage._track(st, ptr, nbytes, index)  # counted
    return ptr


def register() -> None:
    """Register :func:`check_room` and :func:`own_memory` as the core's ops (the Python path's install)."""
    if not native.load() or _library:
        return
    lib = torch.library.Library("accel_neuron_emu", "IMPL")
    lib.impl("python_check_room", check_room, "PrivateUse1")
    lib.impl("python_own_memory", own_memory, "PrivateUse1")
    _library.append(lib)
