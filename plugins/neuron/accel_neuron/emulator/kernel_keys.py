"""Where the Python kernel is registered: on PrivateUse1, or under the C++ core's compiled kernel.

On the ``python`` path the generic kernel (:func:`.fallback.run`) is the PrivateUse1 kernel. With
the compiled per-op path (``native.hot_path() == "native"``) the PrivateUse1 kernels are the C++
core's (``csrc/kernels.cpp``); it hands every call it does not take itself to the PrivateUse3
key, where the Python kernels are registered instead. :func:`use_compiled_path` makes that choice,
once, at install (``registration.register``), before any kernel is registered.
"""

from __future__ import annotations

from typing import Any

import torch

from .fallback import run
from .op_info import info_for

_mode = {"key": "PrivateUse1"}  # the dispatch key of the Python kernels
native_ops: dict[str, None] = {}  # overloads registered through register_generic with the compiled path


def use_compiled_path() -> str:
    """Register the Python kernels under the compiled one (at install, before any); returns their key."""
    _mode["key"] = "PrivateUse3"
    return "PrivateUse3"


def kernel_key() -> str:
    """The dispatch key the Python kernels go on: PrivateUse1, or PrivateUse3 with the compiled path."""
    return _mode["key"]


def register_generic(lib: torch.library.Library, name: str, op: Any) -> None:
    """Register the generic kernel for overload `name` (``add.Tensor``) of `op` in `lib` (aten IMPL).

    With the compiled path the compiled kernel takes PrivateUse1 (``registration.register``
    registers :data:`native_ops` with the core once all Python kernels are in) and this one PrivateUse3.
    """
    if _mode["key"] == "PrivateUse1":
        lib.impl(name, kernel_for(op), "PrivateUse1")
    elif name not in native_ops:  # the Python path skips ops that got a PrivateUse1 kernel already
        lib.impl(name, kernel_for(op), _mode["key"])
        native_ops[name] = None


def kernel_for(op: Any):
    """An explicit kernel for `op` (same behaviour as the fallback).

    Its :class:`.op_info.OpInfo` is read at its first call, not here: about 1,400 ops get a kernel
    at install and most never reach the Python kernel on the compiled path, and each info's
    containers would stay in the garbage collector's oldest generation for the process's life.
    """

    def kernel(*args: Any, **kwargs: Any) -> Any:
        return run(op, info_for(op), args, kwargs)

    return kernel
