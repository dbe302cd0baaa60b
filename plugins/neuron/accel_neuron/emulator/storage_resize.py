"""``UntypedStorage.resize_`` for neuron storages: how FSDP2 frees and re-allocates parameter memory.

FSDP2 (``torch.distributed.fsdp.fully_shard``) frees an unsharded parameter after use with
``tensor.untyped_storage().resize_(0)`` and allocates it again before the next all-gather
with ``resize_(nbytes)``; the tensor, its views and the ``nn.Parameter`` keep the same
storage object throughout. For a PrivateUse1 storage PyTorch does that through the C++
``PrivateUse1HooksInterface.resizePrivateUse1Bytes``, which a Python backend cannot
provide ("You should register `PrivateUse1HooksInterface`... resizePrivateUse1Bytes").

:func:`install` routes ``resize_`` of neuron storages to :func:`resize_storage`: it makes a
neuron storage of the new size (copying the bytes that fit), then moves that memory into
the caller's storage object with ``_swap_data_ptr_`` (via an empty storage, which the
swap requires when both sizes differ), so every tensor over the storage sees the new
memory. The emulator's bookkeeping (CPU alias, view cache, allocation statistics) moves
with it. Other storages keep PyTorch's own ``resize_``.
"""

from __future__ import annotations

import weakref

import torch

from . import memory, storage

_stock_resize = torch.UntypedStorage.resize_


def _byte_view(alias: torch.UntypedStorage) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8).set_(alias, 0, (alias.nbytes(),), (1,))


def resize_storage(st: torch.UntypedStorage, nbytes: int) -> None:
    """Give neuron storage ``st`` ``nbytes`` of memory, keeping its first ``min(old, new)`` bytes."""
    old = st.nbytes()
    if nbytes == old:
        return
    device = st.device
    index = getattr(st, "_emu_index", device.index or 0)
    old_ptr = st.data_ptr()
    cpu = torch.UntypedStorage(nbytes)
    new = storage._new_storage_over(cpu, cpu.data_ptr(), nbytes, index)
    keep = min(old, nbytes)
    if keep:
        _byte_view(new._emu_cpu)[:keep].copy_(_byte_view(st._emu_cpu)[:keep])
    if old:
        holder = storage._construct_storage(0, device, 0)
        holder._swap_data_ptr_(st)  # st is now empty; holder has the old memory until it is dropped
    if nbytes:
        st._swap_data_ptr_(new)
    # The bookkeeping follows the memory: st owns the new allocation, the old one is released.
    st._emu_cpu = new._emu_cpu if nbytes else torch.UntypedStorage(0)
    st._emu_views = {}
    st._emu_index = index
    if old and storage._by_ptr.get(old_ptr) is not None and storage._by_ptr[old_ptr]() is st:
        del storage._by_ptr[old_ptr]  # its free callback goes with it: account for the free here
        memory.free(old, index)
    if nbytes:
        ptr = st.data_ptr()
        storage._by_ptr[ptr] = weakref.ref(st, storage._on_free(ptr, nbytes, index))


def _resize(self: torch.UntypedStorage, size: int) -> torch.UntypedStorage:
    if self.device.type == "neuron":
        resize_storage(self, int(size))
        return self
    return _stock_resize(self, size)


def install() -> None:
    """Route ``torch.UntypedStorage.resize_`` of neuron storages to :func:`resize_storage`."""
    torch.UntypedStorage.resize_ = _resize  # type: ignore[method-assign]
