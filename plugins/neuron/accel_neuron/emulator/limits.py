"""What Python cannot provide for a PrivateUse1 device, handled or turned into clear errors.

PyTorch reaches some device services through C++ interfaces a Python backend
cannot implement (an allocator, pinned memory, device generators, allocator
statistics). Left alone, they crash the process (``torch.UntypedStorage(n,
device="neuron")``, ``copy.deepcopy``, ``torch.load(map_location="neuron")``)
or fail with internal asserts. This module patches the Python entry points:

* ``torch.UntypedStorage(..., device="neuron")`` allocates CPU memory and wraps
  it (this also makes storage ``clone``, ``deepcopy`` and ``torch.load`` work; where the storage
  path has it, a neuron storage's ``clone`` is one call), and
  ``UntypedStorage.resize_`` on a neuron storage moves it to new memory (FSDP frees
  and re-allocates parameter storage that way), and a slice of a neuron storage
  (``storage[a:b]``) is a neuron storage over those bytes that the emulator knows, and
  ``UntypedStorage._swap_data_ptr_`` between neuron storages moves what the emulator keeps
  about each one's memory along with it;
* ``torch.accelerator.synchronize`` routes to ``torch.neuron`` when it refers to the neuron
  device, and so do ``empty_cache``/``memory_*``/``get_memory_info`` on the Python per-op path (on the
  compiled one the C++ core's c10 device allocator serves them: ``csrc/device_allocator.cpp``);
* without the C++ core (``native.py``), ``Tensor.pin_memory()`` returns an unpinned CPU
  copy (with it, the core's pinned-memory allocator serves it and ``is_pinned()`` is true).

Each patch is listed under "Emulator limits" in plugins/neuron/README.md.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from . import device_module, devices, memory, native, storage

_patched = False


def _is_neuron(device: Any) -> bool:
    if device is None:
        return True  # torch.accelerator's default is the current accelerator, which is neuron
    if isinstance(device, int):
        return True
    return torch.device(device).type == "neuron"


def _patch_storage() -> None:
    base_new = torch._C.StorageBase.__new__

    def __new__(cls: type, *args: Any, device: Any = None, **kwargs: Any) -> Any:
        if device is not None:
            dev = device if type(device) is torch.device else torch.device(device)
            if dev.type == "neuron":
                index = devices.index_of(dev)
                new = storage.active().new_storage
                if new is not None and len(args) == 1 and type(args[0]) is int and not kwargs:
                    return new(args[0], index)  # copy.deepcopy's and clone()'s call: one op
                try:
                    cpu = base_new(cls, *args, **kwargs)
                except RuntimeError as e:  # the host could not allocate: the device is out of memory
                    oom = memory.host_failure(e, index)
                    if oom is None:
                        raise
                    raise oom from None
                return storage.active().neuron_storage_for(cpu, index)
            return base_new(cls, *args, device=device, **kwargs)
        return base_new(cls, *args, **kwargs)

    torch.UntypedStorage.__new__ = __new__  # type: ignore[method-assign]

    base_clone = torch.UntypedStorage.clone

    def clone(self: torch.UntypedStorage) -> torch.UntypedStorage:
        # copy.deepcopy of every neuron tensor comes here: one call of the storage path instead of a
        # new storage and a copy_ (two empty tensors, two set_ and a copy on the device).
        if self.device.type == "neuron":
            fast = storage.active().clone_storage
            if fast is not None:
                try:
                    return fast(self)
                except NotImplementedError:  # a storage the emulator did not make: PyTorch's clone
                    pass
        return base_clone(self)

    torch.UntypedStorage.clone = clone  # type: ignore[method-assign]

    base_resize = torch.UntypedStorage.resize_

    def resize_(self: torch.UntypedStorage, size: int) -> torch.UntypedStorage:
        if self.device.type == "neuron":
            storage.active().resize_storage(self, int(size))
            return self
        return base_resize(self, size)

    torch.UntypedStorage.resize_ = resize_  # type: ignore[method-assign]

    base_getitem = torch.UntypedStorage.__getitem__

    def __getitem__(self: torch.UntypedStorage, *args: Any, **kwargs: Any) -> Any:
        # PyTorch's C++ slice is a storage over the sliced bytes that the emulator did not make,
        # so no CPU memory is known behind it: the emulator makes the slice itself.
        if self.device.type == "neuron" and len(args) == 1 and not kwargs and isinstance(args[0], slice):
            start, stop, step = args[0].indices(self.nbytes())
            if step == 1:
                return storage.active().storage_slice(self, start, max(stop - start, 0))
        return base_getitem(self, *args, **kwargs)

    torch.UntypedStorage.__getitem__ = __getitem__  # type: ignore[method-assign]

    base_swap = torch.UntypedStorage._swap_data_ptr_

    def _swap_data_ptr_(self: torch.UntypedStorage, other: torch.UntypedStorage) -> None:
        # The memory behind a neuron storage is known to the emulator beyond its data pointer
        # (on the Python per-op path: the CPU alias kernels read it through): the storage path
        # moves that along.
        if self.device.type == "neuron":
            return storage.active().swap_data_ptr(self, other)
        return base_swap(self, other)

    torch.UntypedStorage._swap_data_ptr_ = _swap_data_ptr_  # type: ignore[method-assign]


def _route(name: str, target: Any, original: Any) -> Any:
    @functools.wraps(original)
    def routed(device_index: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        if _is_neuron(device_index):
            return (
                target(device_index, *args, **kwargs) if device_index is not None else target(*args, **kwargs)
            )
        return original(device_index, *args, **kwargs)

    return routed


def _memory_info(device: Any = None) -> tuple[int, int]:
    total = device_module.get_device_properties(device).total_memory
    return total - device_module.memory_allocated(device), total


def _patch_accelerator() -> None:
    import torch.accelerator as acc
    import torch.accelerator.memory as accmem

    targets: dict[str, Any] = {"synchronize": device_module.synchronize}
    if not memory.in_core():
        # With the C++ core its c10 device allocator serves these (csrc/device_allocator.cpp).
        targets |= {
            "memory_stats": device_module.memory_stats,
            "memory_allocated": device_module.memory_allocated,
            "max_memory_allocated": device_module.max_memory_allocated,
            "memory_reserved": device_module.memory_reserved,
            "max_memory_reserved": device_module.max_memory_reserved,
            "reset_accumulated_memory_stats": device_module.reset_accumulated_memory_stats,
            "reset_peak_memory_stats": device_module.reset_peak_memory_stats,
            "get_memory_info": _memory_info,
        }
    for name, target in targets.items():
        for mod in (acc, accmem):
            original = getattr(mod, name, None)
            if original is not None:
                setattr(mod, name, _route(name, target, original))
    for mod in (acc, accmem):
        if hasattr(mod, "empty_cache") and not memory.in_core():
            mod.empty_cache = device_module.empty_cache


def _patch_pin_memory() -> None:
    def pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
        """Emulator: no pinned memory exists; returns an unpinned contiguous CPU copy."""
        if not self.is_cpu:
            raise RuntimeError(f"cannot pin '{self.device}' memory: only dense CPU tensors can be pinned")
        return self.clone(memory_format=torch.contiguous_format)

    torch.Tensor.pin_memory = pin_memory  # type: ignore[method-assign,assignment]


def patch() -> None:
    """Apply the patches (once)."""
    global _patched
    if _patched:
        return
    _patch_storage()
    _patch_accelerator()
    if native.library() is None:
        _patch_pin_memory()
    _patched = True
