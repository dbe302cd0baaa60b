"""Written arguments of an op on the Python kernel: re-pointed after the op, or grown for out=.

Used by :func:`.fallback.run` for ops that may re-point a written argument (``set_``,
``resize_``, in-place views, out=) and for out= outputs that must grow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from . import storage
from .errors import refuses_to_grow

if TYPE_CHECKING:
    from .op_info import OpInfo

_Tensor = torch.Tensor
_is_cow = torch._C._is_cow_tensor
#: Whether any neuron tensor was lazily cloned (written arguments may be copy-on-write from then on).
_copy_on_write_made = [False]


def note_copy_on_write() -> None:
    """A copy-on-write neuron tensor is being made (``_lazy_clone``): :func:`materialize` has work from now on."""
    _copy_on_write_made[0] = True


def materialize(info: OpInfo, args: tuple, kwargs: dict) -> None:
    """Give each copy-on-write written argument memory of its own before its CPU view is made.

    CPU kernels write through CPU views of neuron memory, which c10 does not see: asking for the
    storage's mutable data (``UntypedStorage.data_ptr``) runs c10's materialization, as a CPU or
    CUDA kernel's write does. Reads never do. Nothing to do before any ``_lazy_clone``.
    """
    if not _copy_on_write_made[0]:
        return
    for pos, name in zip(info.write_pos, info.write_names, strict=True):
        value = arg(info, pos, name, args, kwargs)
        for t in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(t, _Tensor) and not t.is_cpu and _is_cow(t):
                t.untyped_storage().data_ptr()


def arg(info: OpInfo, pos: int, name: str, args: tuple | list, kwargs: dict) -> Any:
    if 0 <= pos < len(args):
        return args[pos]
    return kwargs.get(name)


def resync(info: OpInfo, args: tuple, kwargs: dict, cargs: list, ckwargs: dict) -> None:
    """After an op that may re-point a written argument, make the neuron tensor follow its CPU view."""
    for pos, name in zip(info.write_pos, info.write_names, strict=True):
        n = arg(info, pos, name, args, kwargs)
        c = arg(info, pos, name, cargs, ckwargs)
        if isinstance(n, _Tensor) and n is not c:
            _follow(n, c)
        elif isinstance(n, (list, tuple)):
            for nn, cc in zip(n, c, strict=True):
                if isinstance(nn, _Tensor) and nn is not cc:
                    _follow(nn, cc)


def _follow(n: torch.Tensor, c: torch.Tensor) -> None:
    cst = c.untyped_storage()
    if (
        cst.data_ptr() != n.untyped_storage().data_ptr()
        or n.shape != c.shape
        or n.stride() != c.stride()
        or n.storage_offset() != c.storage_offset()
    ):
        st = storage.active().neuron_storage_for(cst, n.get_device())
        storage.set_geometry(n, st, c.storage_offset(), c.shape, c.stride())


def run_out(op: Any, info: OpInfo, args: tuple, kwargs: dict, cargs: list, ckwargs: dict) -> Any:
    """Run an out= op; if an output must grow, run it into fresh CPU tensors and re-point the outputs."""
    try:
        return op(*cargs, **ckwargs)
    except RuntimeError as e:
        if not refuses_to_grow(e):
            raise
    for pos, name in zip(info.write_pos, info.write_names, strict=True):
        if pos >= 0:
            continue  # only kwarg-only (out=) arguments are replaced
        c = ckwargs.get(name)
        if isinstance(c, _Tensor):
            ckwargs[name] = torch.empty(0, dtype=c.dtype)
        elif isinstance(c, (list, tuple)):
            ckwargs[name] = [torch.empty(0, dtype=x.dtype) for x in c]
    return op(*cargs, **ckwargs)
