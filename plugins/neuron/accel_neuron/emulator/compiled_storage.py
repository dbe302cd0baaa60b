"""The ``native`` storage path: the C++ core keeps every neuron storage's bookkeeping.

With the compiled per-op path (``native.hot_path() == "native"``) the C++ core
(``csrc/allocator.cpp``) owns the CPU alias, the memory statistics and the data-pointer map of
every neuron storage, in the DataPtr context of the storage, so storages made by the compiled
kernel and by the Python kernel are the same kind. :func:`path` builds the
:class:`.storage.StoragePath` over the core's operators, for :func:`.storage.select`.
"""

from __future__ import annotations

import torch

from .storage import StoragePath, set_geometry

_cpu_empty = torch.empty


def path() -> StoragePath:
    """The C++ core's storage path (its library must be loaded: ``torch.ops.accel_neuron_emu``)."""
    ops = torch.ops.accel_neuron_emu
    native_to_neuron = ops.to_neuron.default._op
    native_cpu_view = ops.cpu_view.default._op
    native_resize = ops.resize_storage.default._op
    native_slice = ops.storage_slice.default._op
    native_lazy_clone = ops.lazy_clone.default._op  # c10 copy-on-write (csrc/cow.cpp)
    native_new_storage = ops.new_storage.default._op
    native_clone_storage = ops.clone_storage.default._op
    native_share_version = ops.share_version.default._op

    def new_storage(nbytes: int, index: int) -> torch.UntypedStorage:
        """A new neuron storage of `nbytes` on device `index` (C++ core: host memory taken over, counted)."""
        return native_new_storage(nbytes, index).untyped_storage()

    def clone_storage(st: torch.UntypedStorage) -> torch.UntypedStorage:
        """``st.clone()`` of a neuron storage (C++ core: a new counted storage, the bytes copied)."""
        return native_clone_storage(st).untyped_storage()

    def neuron_storage_for(cpu_storage: torch.UntypedStorage, index: int = 0) -> torch.UntypedStorage:
        """The neuron storage over the memory of `cpu_storage` (C++ core)."""
        c = _cpu_empty(0, dtype=torch.uint8).set_(cpu_storage, 0, (cpu_storage.nbytes(),), (1,))
        return native_to_neuron(c, index).untyped_storage()

    def holder_of(st: torch.UntypedStorage) -> torch.Tensor:
        """An empty uint8 neuron tensor on `st`: how the C++ core's storage ops are handed a storage."""
        holder = native_to_neuron(_cpu_empty(0, dtype=torch.uint8), st.device.index or 0)
        set_geometry(holder, st, 0, (0,), (1,))
        return holder

    def resize_storage(st: torch.UntypedStorage, nbytes: int) -> None:
        """``UntypedStorage.resize_`` for a neuron storage (C++ core: new memory, old bytes kept)."""
        native_resize(holder_of(st), nbytes)

    def storage_slice(st: torch.UntypedStorage, start: int, nbytes: int) -> torch.UntypedStorage:
        """``st[start:start + nbytes]`` of a neuron storage (C++ core: shared bytes, not counted)."""
        return native_slice(holder_of(st), start, nbytes).untyped_storage()

    return StoragePath(
        name="native",
        to_neuron=native_to_neuron,
        cpu_view=native_cpu_view,  # the core makes a new view every time: one function serves both
        fresh_cpu_view=native_cpu_view,
        neuron_storage_for=neuron_storage_for,
        resize_storage=resize_storage,
        storage_slice=storage_slice,
        # the core reads a storage's memory through its data pointer alone: PyTorch's swap is complete
        swap_data_ptr=torch._C.StorageBase._swap_data_ptr_,
        lazy_clone=native_lazy_clone,
        new_storage=new_storage,
        clone_storage=clone_storage,
        share_version=native_share_version,
    )
