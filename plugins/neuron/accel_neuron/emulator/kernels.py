"""Neuron kernels that cannot be the generic CPU-view kernel: storage re-pointing and resizing.

``set_`` with a neuron storage and ``resize_`` change which memory a neuron
tensor uses, which a CPU view cannot express; they run the CPU kernel on the
neuron tensor itself (CPU redispatch), allocating through the emulator.
"""

from __future__ import annotations

from typing import Any

import torch

from . import fallback, routing, storage, written_args
from .errors import refuses_to_grow
from .op_info import info_for

_CPU_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_set_storage = torch.ops.aten.set_.source_Storage_storage_offset


def _check_storage(self: torch.Tensor, source: Any) -> torch.UntypedStorage:
    st = source.untyped_storage() if isinstance(source, torch.TypedStorage) else source
    if st.device != self.device:
        raise RuntimeError(
            f"Attempted to set the storage of a tensor on device {self.device} to a storage on device {st.device}. "
            "This is no longer allowed; the devices must match."
        )
    return st


def set_source_storage(self: torch.Tensor, source: Any) -> torch.Tensor:
    """``self.set_(storage)``: view the whole neuron storage as a 1-D tensor."""
    st = _check_storage(self, source)
    n = st.nbytes() // self.element_size()
    _set_storage.redispatch(_CPU_KEYSET, self, st, 0, (n,), (1,))
    return self


def set_source_storage_offset(
    self: torch.Tensor, source: Any, storage_offset: int, size: Any, stride: Any = ()
) -> torch.Tensor:
    """``self.set_(storage, offset, size, stride)`` on a neuron storage."""
    st = _check_storage(self, source)
    if not stride:
        stride = torch.empty(size, device="meta").stride()
    _set_storage.redispatch(_CPU_KEYSET, self, st, storage_offset, size, stride)
    return self


def _must_grow(self: torch.Tensor, size: Any) -> bool:
    """True when the CPU's ``resize_`` of `self` to `size` certainly grows its storage (False: not sure).

    The CPU kernel grows the storage when the sizes change, the new tensor has elements and they
    (from the storage offset on, contiguous, whatever the memory format) need more bytes than the
    storage has; growing the neuron tensor's CPU alias (not resizable) fails, and that error costs
    some 80 us. Plain non-negative int sizes only: anything else is left to the CPU kernel.
    """
    if not isinstance(size, (list, tuple)) or not all(type(n) is int and n >= 0 for n in size):
        return False
    numel = 1
    for n in size:
        numel *= n
    if numel == 0 or tuple(size) == tuple(self.shape) or numel >= 1 << 48:
        return False
    return (self.storage_offset() + numel) * self.element_size() > self.untyped_storage().nbytes()


def resize_(self: torch.Tensor, size: Any, memory_format: Any = None) -> torch.Tensor:
    """Resize a neuron tensor, moving it to a larger neuron storage (old bytes kept) when it must grow.

    The CPU view is a fresh one: ``resize_`` changes its geometry (even when it then fails for
    want of room, the sizes are set first), and the Python path's cached view of this geometry
    is lent to every later op on a tensor shaped as ``self`` was, on the same storage.
    To grow, the CPU kernel resizes a CPU copy of the old bytes, so that what it does to the
    new bytes is the CPU's too: under ``torch.utils.deterministic.fill_uninitialized_memory``
    with deterministic algorithms on, it fills them with NaN (integers: their maximum).
    """
    grow = _must_grow(self, size)  # the CPU kernel would refuse to grow the alias: skip its costly error
    if not grow:
        c = storage.active().fresh_cpu_view(self)
        try:
            c.resize_(size, memory_format=memory_format)
        except RuntimeError as e:
            if not refuses_to_grow(e):
                raise
            grow = True
    if grow:
        old = storage.active().cpu_view(self).untyped_storage()
        grown = old.clone()  # resizable, unlike the alias it copies
        c = torch.empty(0, dtype=self.dtype).set_(grown, self.storage_offset(), self.shape, self.stride())
        c.resize_(size, memory_format=memory_format)
    st = storage.active().neuron_storage_for(c.untyped_storage(), self.get_device())
    storage.set_geometry(self, st, c.storage_offset(), c.shape, c.stride())
    return self


def lazy_clone(self: torch.Tensor) -> torch.Tensor:
    """``Tensor._lazy_clone`` on the neuron device: the storage path's (copy-on-write on the compiled one).

    PyTorch's composite kernel cannot make a neuron storage copy-on-write (c10 wants a DataPtr whose
    context is its data, and the emulator's holds its bookkeeping), and the CPU's kernel run on a CPU
    view would give a clone of the CPU alias, mapped back onto the original neuron storage.
    """
    written_args.note_copy_on_write()
    return storage.active().lazy_clone(self)


#: The device-agnostic views (routing.py): their CPU kernel runs on the neuron tensor itself.
DEVICE_AGNOSTIC_VIEWS = routing.DEVICE_AGNOSTIC_VIEWS


def _view_kernel(op: Any):
    handle = op._handle
    name = op._schema.name

    def kernel(self: torch.Tensor, *args: Any) -> Any:
        if self.is_cpu:
            raise fallback.device_mismatch(info_for(op), 0)
        return handle.redispatch_boxed(_CPU_KEYSET, self, *args)

    kernel.__name__ = f"neuron_{name.split('::')[-1]}"
    return kernel


def special_kernels() -> dict[str, Any]:
    """The explicit kernels, by overload name."""
    kernels: dict[str, Any] = {
        "set_.source_Storage": set_source_storage,
        "set_.source_Storage_storage_offset": set_source_storage_offset,
        "resize_": resize_,
        "_lazy_clone": lazy_clone,
    }
    for name in DEVICE_AGNOSTIC_VIEWS:
        base, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, base), overload or "default")
        kernels[name] = _view_kernel(op)
    return kernels


__all__ = ["special_kernels", "fallback"]
