"""Keep shared and lazy parameters through ``Module.to()`` on devices torch will not shallow-copy into.

``torch.nn.Module._apply`` (behind ``.to()``, ``.cpu()``, ``.half()``, ``.to_empty()``)
moves a parameter by ``param.data = converted`` only when
``torch._has_compatible_shallow_copy_type(param, converted)`` is true. c10 counts only
CPU, CUDA, MPS, HIP, XPU, HPU and MTIA tensors as mutually compatible, so for a
PrivateUse1 device (every out-of-tree accelerator) it builds a new ``Parameter`` per
module instead. Two things a user sees break (PyTorch 2.13):

* a parameter shared by two modules (``lm_head.weight = wte.weight``) becomes two
  parameters: the model trains two matrices and diverges from a CPU or CUDA run;
* an ``UninitializedParameter`` of a lazy module becomes an ordinary empty
  ``Parameter``: the first forward fails (``in_features ... from self.weight: 0``).

:func:`enable` wraps ``Module._apply`` so that, within one outermost call, a tensor that
is converted into a new object is converted once and the one result is used wherever
the original was (tied parameters stay tied, shared buffers stay shared), and an
uninitialized parameter stays uninitialized on its new device and dtype. Conversions
that torch does in place (``.data =``, or swapping with
``torch.__future__.set_swap_module_params_on_conversion(True)``) are left untouched,
so on CPU and CUDA the wrapper changes nothing. :func:`disable` restores the original.

A converted parameter keeps its identity, as on CUDA: ``m.weight is p`` after
``m.to(device)`` (code that holds a parameter across ``.to()``, e.g. an optimizer made
before it, or transformers' tests, sees the moved tensor). The original ``Parameter``
object is given the converted tensor (data, device, ``.grad``) with
``torch.utils.swap_tensors`` and keeps its class and attributes; where torch refuses the
swap (another reference holds the original's tensor: a view of it, a weak reference), the
parameter is replaced by the converted one, as stock torch does. Unlike
``set_swap_module_params_on_conversion``, this touches only the conversions torch cannot
do in place, and leaves every other ``.to()`` and ``load_state_dict`` as they are. Sharing
is kept within one call: two separate ``.to()`` calls on two modules that share a tensor
give two tensors, as stock torch does.

Enabling is reference-counted by owner, so two plugins may each ask for it.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.nn.parameter import UninitializedParameter

__all__ = ["disable", "enable", "enabled", "owners", "paused"]

_lock = threading.Lock()
_owners: set[str] = set()
_original: Callable[..., Any] | None = None


_Memo = dict[int, tuple[torch.Tensor, torch.Tensor]]  # id(original) -> (original, replacement)


class _CallState(threading.local):
    """The memos of the outermost ``_apply`` call running in this thread (``None`` outside one)."""

    tensors: _Memo | None = None  # what ``fn`` turned into a new object
    parameters: _Memo | None = None  # the Parameter that replaced a Parameter


_state = _CallState()


def _memoized(
    fn: Callable[[torch.Tensor], torch.Tensor], memo: _Memo
) -> Callable[[torch.Tensor], torch.Tensor]:
    """``fn`` that converts a tensor into a new object at most once per outermost call."""

    def convert(tensor: torch.Tensor) -> torch.Tensor:
        hit = memo.get(id(tensor))
        if hit is not None:
            return hit[1]
        result = fn(tensor)
        if result is not tensor and not torch._has_compatible_shallow_copy_type(tensor, result):
            memo[id(tensor)] = (tensor, result)
        return result

    return convert


def _apply(self: torch.nn.Module, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> Any:
    assert _original is not None
    if not _owners:  # disabled while another wrapper still calls this one
        return _original(self, fn, recurse)
    parameters = _state.parameters
    if parameters is None:  # the outermost call: every nested call shares its memos
        _state.tensors, _state.parameters = {}, {}
        try:
            return _apply(self, _memoized(fn, _state.tensors), recurse)
        finally:
            _state.tensors = _state.parameters = None
    before = dict(self._parameters)
    result = _original(self, fn, recurse)
    for key, old in before.items():
        new: torch.Tensor | None = self._parameters.get(key)
        if old is None or new is None or new is old:
            continue  # converted in place (.data = or swap): identity already kept
        # A tied parameter gets the replacement made for the first module that held it;
        # otherwise this one is it, and a lazy parameter stays lazy.
        kept = parameters.get(id(old))
        if kept is None:
            if isinstance(old, UninitializedParameter) and not isinstance(new, UninitializedParameter):
                lazy: type[UninitializedParameter] = type(old)
                # UninitializedParameter.__new__(requires_grad, device, dtype); the stubs give Parameter's
                new = lazy(old.requires_grad, device=new.device, dtype=new.dtype)  # type: ignore[call-arg,arg-type]
            kept = parameters[id(old)] = (old, _keep_object(old, new))
        self._parameters[key] = kept[1]  # type: ignore[assignment]  # a Parameter: what fn made of one
    return result


def _held_once(t: torch.Tensor) -> bool:
    """Whether nothing but ``t`` holds its tensor (no view, no autograd node) and no weak reference
    watches ``t``: the checks ``torch.utils.swap_tensors`` passes without its AccumulateGrad case."""
    return t._use_count() == 1 and not weakref.getweakrefs(t)  # type: ignore[attr-defined]  # not in the stubs


def _keep_object(old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """``old`` holding ``new``'s tensor (data, device, grad), with its own class and attributes; or
    ``new`` where torch refuses to swap them (another reference to ``old``'s tensor or object)."""
    if _held_once(old) and _held_once(new):
        # Nothing else holds either tensor: what swap_tensors does once its checks pass, less swapping
        # the classes, __dict__ and slots, which the object keeps (about 5 us a parameter, per .to()).
        torch._C._swap_tensor_impl(old, new)
        return old
    # Otherwise swap_tensors decides (a leaf's gradient accumulator may hold the tensor once more).
    cls, attrs = type(old), dict(old.__dict__)
    try:
        torch.utils.swap_tensors(old, new)
    except RuntimeError:
        return new
    if type(old) is not cls:
        old.__class__ = cls  # swap_tensors swapped the classes too; the object keeps its own
    old.__dict__.clear()
    old.__dict__.update(attrs)
    return old


def enable(owner: str) -> None:
    """Wrap ``torch.nn.Module._apply`` (idempotent per ``owner``)."""
    global _original
    with _lock:
        if not _owners and torch.nn.Module._apply is not _apply:
            _original = torch.nn.Module._apply
            torch.nn.Module._apply = _apply  # type: ignore[method-assign]
        _owners.add(owner)


def disable(owner: str) -> None:
    """Drop ``owner``'s request; the last one out restores the original ``Module._apply``."""
    with _lock:
        if owner not in _owners:
            return
        _owners.discard(owner)
        if not _owners and torch.nn.Module._apply is _apply:
            torch.nn.Module._apply = _original  # type: ignore[method-assign,assignment]


def enabled() -> bool:
    """True while ``Module._apply`` is wrapped."""
    return bool(_owners)


def owners() -> tuple[str, ...]:
    """Who asked for the wrapper, sorted."""
    return tuple(sorted(_owners))


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Torch's own ``Module._apply`` inside the block, whoever asked for the wrapper; restored after."""
    paused_owners = owners()
    for owner in paused_owners:
        disable(owner)
    try:
        yield
    finally:
        for owner in paused_owners:
            enable(owner)
