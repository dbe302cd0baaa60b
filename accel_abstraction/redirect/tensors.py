"""Redirects for CUDA devices named in tensor code: factories, ``.to``/``.cuda``, ``torch.load``.

These are plain reversible attribute patches, not a ``TorchFunctionMode``. Measured on
this machine (``benchmarks/bench_redirect.py``): an active mode puts a Python call on
*every* torch operation (``a + b`` on small tensors ~2x slower), is per-thread (a tensor
made in another thread would escape it), while a patched factory costs one Python frame
and a dictionary check on the factories only, for all threads, and torch.compile traces
through it (``fullgraph=True`` holds with the ``eager`` and ``aot_eager`` backends).

A call is counted in the report only when it actually named a CUDA device, at the nearest
user frame (``nn.Linear(4, 4, device="cuda")`` is reported at the user's line).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from .hints import port_hint
from .serve import Server
from .sites import NOOP
from .spec import Redirect

__all__ = ["FACTORIES", "tensor_redirects"]

#: torch functions taking a ``device=`` keyword that is redirected when it names CUDA.
FACTORIES = (
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "range",
    "linspace", "logspace", "eye", "tensor", "as_tensor", "asarray", "empty_strided", "empty_permuted",
    "scalar_tensor", "tril_indices", "triu_indices", "normal", "sparse_coo_tensor", "sparse_csr_tensor",
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
    "hann_window", "hamming_window", "bartlett_window", "blackman_window", "kaiser_window",
)  # fmt: skip

#: Tensor methods taking a ``device=`` keyword.
TENSOR_NEW = ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "new_empty_strided")



def _device_kw(s: Server, api: str, original: Callable[..., Any]) -> Callable[..., Any]:
    translate = s.translator.translate
    rec = s.recorder
    rec.describe(api, "device", port_hint(api))

    def replacement(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            dev = kwargs.get("device")
            if dev is not None:
                new = translate(dev)
                if new is not dev:
                    kwargs["device"] = new
                    rec.hit(api)
        return original(*args, **kwargs)

    functools.update_wrapper(replacement, original)
    return replacement


def _to(s: Server, api: str, original: Callable[..., Any]) -> Callable[..., Any]:
    to_args = s.translator.to_args
    rec = s.recorder
    rec.describe(api, "device", port_hint(api))

    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            args, changed = to_args(args, kwargs)
            if changed:
                rec.hit(api)
        return original(self, *args, **kwargs)

    functools.update_wrapper(to, original)
    return to


def tensor_redirects(s: Server) -> list[Redirect]:
    """Redirects of device arguments in tensor and module code."""
    t = s.translator
    rec = s.recorder
    out: list[Redirect] = []

    def add(target: Any, name: str, replacement: Any, api: str) -> None:
        out.append(Redirect(target, name, replacement, "device", api, port_hint(api), record=False))

    for name in FACTORIES:
        fn = getattr(torch, name, None)
        if fn is not None:
            api = f"torch.{name}(device=cuda)"
            add(torch, name, _device_kw(s, api, fn), api)
    for name in TENSOR_NEW:
        fn = getattr(torch.Tensor, name, None)
        if fn is not None:
            api = f"Tensor.{name}(device=cuda)"
            add(torch.Tensor, name, _device_kw(s, api, fn), api)

    tensor_to = torch.Tensor.to
    module_to = torch.nn.Module.to
    add(torch.Tensor, "to", _to(s, "Tensor.to(cuda)", tensor_to), "Tensor.to(cuda)")
    add(torch.nn.Module, "to", _to(s, "Module.to(cuda)", module_to), "Module.to(cuda)")

    rec.describe("Tensor.cuda()", "device", port_hint("Tensor.cuda()"))

    def tensor_cuda(self: Any, device: Any = None, non_blocking: bool = False, memory_format: Any = torch.preserve_format) -> Any:
        rec.hit("Tensor.cuda()")
        return tensor_to(self, t.device_for(device), non_blocking=non_blocking, memory_format=memory_format)

    functools.update_wrapper(tensor_cuda, torch.Tensor.cuda)
    add(torch.Tensor, "cuda", tensor_cuda, "Tensor.cuda()")

    rec.describe("Module.cuda()", "device", port_hint("Module.cuda()"))

    def module_cuda(self: Any, device: Any = None) -> Any:
        rec.hit("Module.cuda()")
        return module_to(self, t.device_for(device))

    functools.update_wrapper(module_cuda, torch.nn.Module.cuda)
    add(torch.nn.Module, "cuda", module_cuda, "Module.cuda()")

    to_empty = torch.nn.Module.to_empty
    add(torch.nn.Module, "to_empty", _device_kw(s, "Module.to_empty(device=cuda)", to_empty), "Module.to_empty(device=cuda)")

    set_default = torch.set_default_device
    rec.describe("torch.set_default_device(cuda)", "device", port_hint("torch.set_default_device(cuda)"))

    def set_default_device(device: Any) -> None:
        new = t.translate(device)
        if isinstance(device, int) and not isinstance(device, bool):
            new = t.device_for(device)
        if new is not device:
            rec.hit("torch.set_default_device(cuda)")
        set_default(new)

    functools.update_wrapper(set_default_device, set_default)
    add(torch, "set_default_device", set_default_device, "torch.set_default_device(cuda)")

    from torch.utils._device import DeviceContext

    context_init = DeviceContext.__init__
    api = 'with torch.device("cuda")'
    rec.describe(api, "device", port_hint(api))

    def device_context_init(self: Any, device: Any) -> None:
        new = t.translate(device)
        if new is not device:
            rec.hit(api)
        context_init(self, new)

    functools.update_wrapper(device_context_init, context_init)
    add(DeviceContext, "__init__", device_context_init, api)

    load = torch.load
    rec.describe("torch.load(map_location=cuda)", "device", port_hint("torch.load(map_location=cuda)"))

    def torch_load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        hits: list[int] = []
        mapped = t.map_location(map_location, lambda: hits.append(1))
        result = load(f, mapped, *args, **kwargs)
        if hits:
            rec.hit("torch.load(map_location=cuda)")
        return result

    functools.update_wrapper(torch_load, load)
    add(torch, "load", torch_load, "torch.load(map_location=cuda)")
    out.append(_pin_memory(s))
    out.append(_is_cuda(s))
    out.append(_generator(s))
    return out


def _pin_memory(s: Server) -> Redirect:
    """``Tensor.pin_memory()``: the backend's pinned copy, or the tensor itself where it has no pinned memory.

    Pinning only speeds up host-to-device copies; on a backend without pinned memory
    (cpu, the emulated neuron device) the tensor is returned as is, and the site is
    reported as ``no-op``. ``x.pin_memory().to(device, non_blocking=True)`` then runs.
    """
    b = s.backend
    rec = s.recorder
    original = torch.Tensor.pin_memory
    pinned = b.capabilities().supports("pinned_memory")
    api = "Tensor.pin_memory()"
    hint = port_hint(api)
    rec.describe(api, "data", hint)

    def pin_memory(self: Any, *args: Any, **kwargs: Any) -> Any:
        key = rec.enter(api)
        if key is None:
            return original(self, *args, **kwargs)
        if pinned:
            return b.pin_memory(self)
        rec.mark(key, NOOP)
        return self

    functools.update_wrapper(pin_memory, original)
    return Redirect(torch.Tensor, "pin_memory", pin_memory, "data", api, hint, record=False)


def _is_cuda(s: Server) -> Redirect:
    """``Tensor.is_cuda``: True, for user code, on tensors on the backend's device.

    Like ``torch.cuda.is_available()``, it answers for the backend the script runs on, so
    a script's accelerator branch (``if x.is_cuda: ...``) is the one taken; torch's own
    code reads the real attribute. On the cpu backend every CPU tensor is on the backend's device.
    """
    b = s.backend
    rec = s.recorder
    real = torch._C.TensorBase.is_cuda
    device_type = b.device_type
    api = "Tensor.is_cuda"
    rec.describe(api, "device", port_hint(api))

    def is_cuda(self: Any) -> bool:
        if rec.enter(api) is None:
            return real.__get__(self)  # type: ignore[no-any-return,attr-defined]  # a getset descriptor
        return self.device.type == device_type  # type: ignore[no-any-return]

    prop = property(is_cuda, doc=real.__doc__)
    return Redirect(torch.Tensor, "is_cuda", prop, "device", api, port_hint(api), record=False)


class _GeneratorMeta(type):
    real: Any = None

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls.real)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls.real)


def _generator(s: Server) -> Redirect:
    """``torch.Generator(device="cuda")``: a generator of the backend's device (``isinstance`` keeps working)."""
    real = torch.Generator
    translate = s.translator.translate
    rec = s.recorder
    api = 'torch.Generator(device="cuda")'
    rec.describe(api, "rng", port_hint(api))

    def __new__(cls: type, device: Any = "cpu") -> Any:  # noqa: N807
        new = translate(device)
        made = real(new)  # counted as redirected only once the backend's generator exists
        if new is not device:
            rec.hit(api)
        return made

    ns = {"__new__": __new__, "__doc__": real.__doc__, "__module__": "torch", "__qualname__": "Generator", "real": real}
    cls = _GeneratorMeta("Generator", (), ns)
    return Redirect(torch, "Generator", cls, "rng", api, port_hint(api), record=False)
