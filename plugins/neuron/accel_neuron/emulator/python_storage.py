"""The Python storage path: neuron storages backed by CPU memory, bookkept in Python.

A neuron tensor here is a real PrivateUse1 tensor whose storage points at CPU
memory. The CPU memory is owned by a CPU storage kept alive as an attribute of
the neuron storage's Python object (PyTorch preserves that object for as long
as the C++ storage lives, across views, ``detach`` and ``nn.Parameter``).

Kernels never touch the neuron tensor's data directly: they get a zero-copy
CPU view (:func:`cpu_view`) over a *non-resizable* CPU storage aliasing the
same memory, so a CPU kernel can never reallocate memory under a neuron
storage. CPU results are mapped back with :func:`to_neuron`: memory that
already belongs to a neuron storage (views, in-place results) is re-viewed
from that storage; new memory gets a new neuron storage.

This is the ``python`` implementation of :class:`.storage.StoragePath` (:data:`PATH`), used when
the C++ core's compiled per-op path is off (``ACCEL_NEURON_EMULATOR_HOT_PATH=python``, or no
compiler). Callers never import these functions: they reach the path install() selected through
:func:`.storage.active`.
"""

from __future__ import annotations

import ctypes
import weakref

import torch

from . import device_module, devices, memory
from .storage import StoragePath

_construct_storage = torch._C._construct_storage_from_data_pointer
_swap_memory = torch._C.StorageBase._swap_data_ptr_  # PyTorch's own: limits.py patches UntypedStorage's
_create_empty = torch._C._acc.create_empty_tensor
_set_storage = torch.ops.aten.set_.source_Storage_storage_offset
_redispatch_set = _set_storage._handle.redispatch_boxed
_cpu_empty = torch.empty
_EMPTY_SHAPE = (0,)
_set_conj = torch._C._set_conj
_set_neg = torch._C._set_neg
_CPU_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_CPU = torch.device("cpu")

_NEURON = devices.DEVICES  # neuron:0 .. neuron:N-1, filled by install() once PrivateUse1 is named "neuron"

# data pointer of a CPU allocation -> weak reference to the neuron storage over it
_by_ptr: dict[int, weakref.ref] = {}
_VIEW_CACHE_SIZE = 8  # CPU views kept per storage, by geometry


def _on_free(alloc: list):
    """Weakref callback for a storage whose allocation is ``alloc`` = [ptr, nbytes, index] (resize_ edits it)."""

    def freed(ref: weakref.ref) -> None:
        ptr, nbytes, index = alloc
        if _by_ptr.get(ptr) is ref:
            del _by_ptr[ptr]
        if nbytes:
            memory.free(nbytes, index)

    return freed


def _track(st: torch.UntypedStorage, ptr: int, nbytes: int, index: int, count: bool = True) -> None:
    """Map `ptr` to `st`, count its allocation (`count`), and free it when `st` goes."""
    alloc = [ptr, nbytes, index]
    ref = weakref.ref(st, _on_free(alloc))
    st._emu_track = (alloc, ref)
    _by_ptr[ptr] = ref
    if count:
        memory.allocate(nbytes, index)


def _new_storage_over(
    cpu_storage: torch.UntypedStorage, ptr: int, nbytes: int, index: int = 0, allocation: bool = True
) -> torch.UntypedStorage:
    """A neuron storage over the `nbytes` at `ptr` of `cpu_storage`'s memory; counted when an `allocation`."""
    if allocation:  # torch.OutOfMemoryError past the device's memory, before anything is kept
        memory.check(nbytes, index)
    st = _construct_storage(ptr, _NEURON[index], nbytes)
    # A non-resizable CPU alias of the same memory, handed to CPU kernels; it keeps the owner alive.
    alias = _construct_storage(ptr, _CPU, nbytes)
    alias._emu_owner = getattr(cpu_storage, "_emu_owner", cpu_storage)
    st._emu_cpu = alias
    st._emu_views = {}
    st._emu_index = index
    if nbytes and allocation:
        _track(st, ptr, nbytes, index)
        if not device_module.is_initialized():
            device_module.set_initialized(True)  # first use of the device, as CUDA's lazy init
    return st


def resize_storage(st: torch.UntypedStorage, nbytes: int) -> None:
    """``UntypedStorage.resize_`` for a neuron storage: new memory (old bytes kept), same storage object.

    FSDP frees and re-allocates parameter memory this way (``resize_(0)``, ``resize_(n)``) while
    tensors keep viewing the storage. The old memory is handed to a placeholder storage (data
    pointers swapped), counted as freed when the placeholder goes; new memory comes from a
    fresh neuron storage the same way.
    """
    old_n = st.nbytes()
    if nbytes == old_n:
        return
    index = st.device.index or 0
    old_ptr = st.data_ptr()  # first: a copy-on-write storage gets memory of its own (python_cow.py)
    old_cpu = st._emu_cpu if hasattr(st, "_emu_cpu") else _adopt(st)
    track = getattr(st, "_emu_track", None)
    held = None
    if old_n:
        held = _construct_storage(0, _NEURON[index], 0)
        _swap_memory(st, held)  # `held` now owns the old memory
        held._emu_cpu = old_cpu
        if track is not None:
            track[0][:] = [0, 0, index]
        _track(held, old_ptr, old_n, index, count=False)  # counted as freed when `held` goes
    if nbytes:
        cpu = torch._C.StorageBase.__new__(torch.UntypedStorage, nbytes)  # CPU memory, unpatched constructor
        keep = min(nbytes, old_n)
        if keep:
            cpu[:keep].copy_(old_cpu[:keep])
        ptr = cpu.data_ptr()
        fresh = _new_storage_over(cpu, ptr, nbytes, index)  # counts the allocation
        _swap_memory(st, fresh)
        st._emu_cpu = fresh._emu_cpu
        fresh._emu_track[0][:] = [0, 0, index]
        if track is not None:
            track[0][:] = [ptr, nbytes, index]
            _by_ptr[ptr] = track[1]
        else:
            _track(st, ptr, nbytes, index, count=False)
    else:
        st._emu_cpu = torch._C.StorageBase.__new__(torch.UntypedStorage, 0)
    st._emu_views = {}
    del held


#: What keeps (and views) a storage's memory; ``_emu_shared``: the copy-on-write group it counts in (python_cow.py).
_MEMORY_ATTRS = ("_emu_cpu", "_emu_views", "_emu_parent", "_emu_shared")


def _hold(st: torch.UntypedStorage, track: tuple | None, alloc: list | None) -> None:
    """Make `st` (its former tracking `track`) count the allocation `alloc` it now holds, or none."""
    if track is not None:
        track[0][:] = alloc if alloc is not None else [0, 0, track[0][2]]
        if alloc is not None and alloc[0]:
            _by_ptr[alloc[0]] = track[1]
    elif alloc is not None:
        _track(st, *alloc, count=False)


def swap_data_ptr(a: torch.UntypedStorage, b: torch.UntypedStorage) -> None:
    """``UntypedStorage._swap_data_ptr_`` for neuron storages: the memory and what keeps it change places.

    PyTorch swaps the two storages' data pointers; the CPU alias each one's tensors are viewed
    through, the memory's owner and its count in the memory statistics go with the memory, so
    every tensor on `a` reads what `b` held and the memory is freed with the storage holding it.
    """
    _swap_memory(a, b)  # PyTorch's checks first (same device)
    for st in (a, b):
        if not hasattr(st, "_emu_cpu"):
            _adopt(st)
    for name in _MEMORY_ATTRS:
        held_a, held_b = getattr(a, name, None), getattr(b, name, None)
        for st, value in ((a, held_b), (b, held_a)):
            if value is not None:
                setattr(st, name, value)
            elif hasattr(st, name):
                delattr(st, name)
    track_a, track_b = getattr(a, "_emu_track", None), getattr(b, "_emu_track", None)
    alloc_a = list(track_a[0]) if track_a is not None else None
    alloc_b = list(track_b[0]) if track_b is not None else None
    _hold(a, track_a, alloc_b)
    _hold(b, track_b, alloc_a)


def neuron_storage_for(cpu_storage: torch.UntypedStorage, index: int = 0) -> torch.UntypedStorage:
    """Return the neuron storage over the memory of `cpu_storage`, creating one on device `index` if needed."""
    ptr = cpu_storage.data_ptr()
    nbytes = cpu_storage.nbytes()
    ref = _by_ptr.get(ptr)
    if ref is not None:
        existing = ref()
        if existing is not None and existing.nbytes() >= nbytes:
            return existing
    return _new_storage_over(cpu_storage, ptr, nbytes, index)


def to_neuron(c: torch.Tensor, index: int = 0) -> torch.Tensor:
    """Map a CPU result tensor to a neuron tensor over the same memory (zero-copy).

    Memory that already backs a neuron storage (a view, an in-place result) stays on that
    storage's device; new memory becomes a storage on device `index`.
    """
    if c.is_quantized:  # NotImplementedError, as the C++ core's: fallback.py names the op and the source
        raise NotImplementedError("the neuron device holds no quantized tensors")
    if c.is_nested:  # (its sizes and strides are not a dense tensor's: it has no neuron twin)
        raise NotImplementedError("the neuron device holds no nested tensors of the strided kind")
    cst = c.untyped_storage()
    ptr = cst.data_ptr()
    ref = _by_ptr.get(ptr)
    st = ref() if ref is not None else None
    if st is None or st.nbytes() < cst.nbytes():
        st = _new_storage_over(cst, ptr, cst.nbytes(), index)
    else:
        index = st._emu_index
    dtype, offset, size, stride = c.dtype, c.storage_offset(), c.shape, c.stride()
    t = _create_empty(_EMPTY_SHAPE, dtype) if index == 0 else _empty_on(index, dtype)
    _redispatch_set(_CPU_KEYSET, t, st, offset, size, stride)
    conj, neg = c.is_conj(), c.is_neg()
    if conj:
        _set_conj(t, True)
    if neg:
        _set_neg(t, True)
    if not (conj or neg) and cst is st._emu_cpu:
        # `c` is a CPU view of `t` already: the next op that reads `t` (usually the very next
        # one) gets it from the view cache instead of building one. Only a view over the
        # storage's CPU alias: new memory comes on the kernel's own CPU storage, and ATen tells
        # overlapping tensors (``y.index_add_(0, i, y[:3])``: "unsupported operation") by their
        # storage, so every CPU view of one neuron storage must be over the same CPU storage.
        cache = st._emu_views
        if len(cache) < _VIEW_CACHE_SIZE:
            cache.setdefault((dtype, size, stride, offset), c)
    return t


# ---------------------------------------------------------------- tensors on neuron:1 and up
#
# PyTorch's Python backend API makes empty PrivateUse1 tensors on index 0 only
# (``torch._C._acc.create_empty_tensor``), and a tensor's storage can only be replaced by one
# on the same device. For index i > 0 the emulator keeps one empty "base" tensor per
# (index, dtype) and aliases it below autograd (a new TensorImpl on neuron:i with its own
# version counter), which ``set_`` then points at the real storage. The first base of a
# device comes from DLPack: a CPU tensor's capsule relabelled as the extension device
# ``kDLExtDev``:i, which PyTorch imports as PrivateUse1 index i.

_KDL_EXT_DEV = 12  # DLDeviceType kDLExtDev
_DLTENSOR_DEVICE_OFFSET = 8  # DLTensor: void* data, then DLDevice {int32 device_type, int32 device_id}
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_alias = torch.ops.aten.alias.default._handle.redispatch_boxed
_view_dtype = torch.ops.aten.view.dtype._handle.redispatch_boxed
_PU1_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)
_bases: dict[tuple[int, torch.dtype], torch.Tensor] = {}


def _device_base(index: int) -> torch.Tensor:
    """An empty float32 tensor on neuron:`index`, imported through DLPack."""
    capsule = torch._C._to_dlpack(torch.empty(0))
    device = (ctypes.c_int32 * 2).from_address(
        _capsule_pointer(capsule, b"dltensor") + _DLTENSOR_DEVICE_OFFSET
    )
    device[0], device[1] = _KDL_EXT_DEV, index
    base = torch._C._from_dlpack(capsule)
    if base.device != _NEURON[index]:  # pragma: no cover - a PyTorch upgrade changed DLPack import
        from .errors import EmulatorError

        raise EmulatorError(
            f"cannot make tensors on neuron:{index}: PyTorch imported a kDLExtDev DLPack tensor as "
            f"{base.device}; this emulator needs PyTorch 2.13's DLPack import (kDLExtDev -> PrivateUse1)"
        )
    return base


def _empty_on(index: int, dtype: torch.dtype) -> torch.Tensor:
    """A new empty neuron tensor of `dtype` on device `index` (> 0), ready for :func:`.storage.set_geometry`."""
    base = _bases.get((index, dtype))
    if base is None:
        base32 = _bases.get((index, torch.float32))
        if base32 is None:
            base32 = _bases[(index, torch.float32)] = _device_base(index)
        base = _bases[(index, dtype)] = _alias(_PU1_KEYSET, _view_dtype(_CPU_KEYSET, base32, dtype))
    return _alias(_PU1_KEYSET, base)


def cpu_view(t: torch.Tensor) -> torch.Tensor:
    """A zero-copy CPU tensor over the memory of neuron tensor `t`, same geometry and dtype.

    Views are cached per storage by geometry (the memory behind a neuron storage never moves),
    so callers must not change a returned view's metadata; use :func:`fresh_cpu_view` for that.
    """
    st = t.untyped_storage()
    try:
        cache = st._emu_views
    except AttributeError:
        return fresh_cpu_view(t)
    if t.is_conj() or t.is_neg():
        return fresh_cpu_view(t)
    dtype = t.dtype
    size = t.size()  # not .shape: UninitializedParameter overrides it to raise (a lazy module's .to())
    stride = t.stride()
    offset = t.storage_offset()
    key = (dtype, size, stride, offset)
    c = cache.get(key)
    if c is None:
        c = _cpu_empty(0, dtype=dtype).set_(st._emu_cpu, offset, size, stride)
        if len(cache) < _VIEW_CACHE_SIZE:
            cache[key] = c
    return c


def fresh_cpu_view(t: torch.Tensor) -> torch.Tensor:
    """Like :func:`cpu_view`, but a new CPU tensor the caller may re-point or resize."""
    st = t.untyped_storage()
    try:
        alias = st._emu_cpu
    except AttributeError:
        alias = _adopt(st)
    c = _cpu_empty(0, dtype=t.dtype).set_(alias, t.storage_offset(), t.size(), t.stride())
    if t.is_conj():
        _set_conj(c, True)  # lazy conjugation / negation bits travel with the view
    if t.is_neg():
        _set_neg(c, True)
    return c


def _adopt(st: torch.UntypedStorage) -> torch.UntypedStorage:
    """CPU alias for a neuron storage that the emulator did not create (only empty placeholders)."""
    if st.nbytes() == 0:
        alias = torch.UntypedStorage(0)
        st._emu_cpu = alias
        return alias
    from .errors import EmulatorError

    raise EmulatorError(
        "found a neuron storage with no CPU memory behind it; it was not created by the neuron "
        "emulator (a C++ extension or an unsupported constructor made it)"
    )


def storage_slice(st: torch.UntypedStorage, start: int, nbytes: int) -> torch.UntypedStorage:
    """``st[start:start + nbytes]`` of a neuron storage: a new one over those bytes, not counted.

    Like the allocation it slices, the slice's memory is held by its CPU alias (which keeps the
    owner of the memory alive); the slice also keeps `st` alive, as PyTorch's storage slice does.
    """
    ptr = st.data_ptr()  # first: the slice may be written, so a copy-on-write `st` gets memory of its own
    parent_cpu = st._emu_cpu if hasattr(st, "_emu_cpu") else _adopt(st)
    sliced = _new_storage_over(parent_cpu, ptr + start, nbytes, st.device.index or 0, allocation=False)
    sliced._emu_parent = st
    return sliced


def lazy_clone(t: torch.Tensor) -> torch.Tensor:
    """``Tensor._lazy_clone``: c10 copy-on-write (:mod:`.python_cow`, with the C++ core), else :func:`copy_at_once`."""
    from . import python_cow  # it builds on this module

    return python_cow.lazy_clone(t)


def copy_at_once(t: torch.Tensor) -> torch.Tensor:
    """``Tensor._lazy_clone`` without the C++ core: a copy of the whole storage now, same geometry.

    Only the core can make a c10 copy-on-write DataPtr; ``torch._C._is_cow_tensor`` is False then.
    """
    memory = fresh_cpu_view(t).untyped_storage().clone()  # the whole storage, as the CPU's clone keeps it
    copy = _cpu_empty(0, dtype=t.dtype).set_(memory, t.storage_offset(), t.size(), t.stride())
    return to_neuron(copy, t.get_device())


#: The Python storage path, for :func:`.storage.select`.
PATH = StoragePath(
    name="python",
    to_neuron=to_neuron,
    cpu_view=cpu_view,
    fresh_cpu_view=fresh_cpu_view,
    neuron_storage_for=neuron_storage_for,
    resize_storage=resize_storage,
    storage_slice=storage_slice,
    swap_data_ptr=swap_data_ptr,
    lazy_clone=lazy_clone,
)
