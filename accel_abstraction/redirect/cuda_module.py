"""Redirects for the ``torch.cuda`` module: each function the backend interface covers.

The functions and how each is served are the rows of :mod:`.cuda_rows`, derived from the
porting table (the port's replacement, called with the same arguments); this module installs
them, and the classes and context manager that have no row.

``torch.cuda.is_available()`` and ``device_count()`` answer for the *selected backend*
when called from user code (a script then takes its accelerator path, which is
redirected); torch's own calls still get the real answers, so torch never enters a CUDA
code path it cannot serve. ``torch.cuda.Stream`` / ``Event`` construct the backend's
classes where ``capabilities()`` declares streams/events (events without them are timed on
the host: :mod:`.timing`). ``empty_cache()`` on a backend without a cache is a no-op
(reported as such). ``get_device_properties``/``get_device_capability`` are answered by
:mod:`.device_info`. Functions of ``torch.cuda`` the
interface has no equivalent for raise :class:`~accel_abstraction.redirect.errors.RedirectCapabilityError`
from user code (unless the selected backend is CUDA itself, which serves them).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from .cuda_rows import CLASSES, ROWS, CudaRow, Serve
from .devices import CUDA
from .hints import port_hint
from .serve import NO_NEUTRAL, Server
from .spec import Redirect
from .timing import host_event_class

__all__ = ["NO_NEUTRAL", "ROWS", "CudaRow", "Serve", "cuda_module_redirects"]

#: torch.cuda functions left alone even when unsupported (harmless, true answers on any build).
_LEFT_ALONE = frozenset({"is_initialized"})


_SERVED = frozenset(row.name for row in ROWS)


def _class_redirect(s: Server, name: str, feature: str) -> Redirect:
    """``torch.cuda.Stream`` / ``Event``: construct the backend's class, or raise if it has none."""
    api = f"torch.cuda.{name}"
    b = s.backend
    rec = s.recorder
    real: Any = getattr(b, name) if b.capabilities().supports(feature) else None
    if real is None and name == "Event":
        real = host_event_class(b)  # timing events served by the host clock
    rec.describe(api, "execution", port_hint(api))

    class _Meta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return real is not None and isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return real is not None and issubclass(sub, real)

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        key = rec.hit(api)
        if real is None:
            raise s.capability_error(api, None, key, feature)
        return real(*args, **kwargs)

    cls = _Meta(name, (), {"__new__": __new__, "__doc__": f"{api}, redirected to backend {b.name!r}.",
                           "__module__": "torch.cuda", "__qualname__": name})  # fmt: skip
    return Redirect(torch.cuda, name, cls, "execution", api, port_hint(api), record=False)


def _device_context(s: Server) -> Redirect:
    """``with torch.cuda.device(i):``: make backend device ``i`` current inside the block."""
    api = "torch.cuda.device"
    b = s.backend
    rec = s.recorder
    rec.describe(api, "device", port_hint(api))

    class device:  # noqa: N801 - mirrors torch.cuda.device
        __doc__ = f"{api}, redirected to backend {b.name!r}: selects a device of that backend inside the block."
        __module__ = "torch.cuda"

        def __init__(self, device: Any) -> None:
            rec.hit(api)
            # torch.cuda.device(-1) / (None) is a documented no-op
            self.idx = None if device is None or (isinstance(device, int) and device < 0) else s.translator.index(device)
            self.prev: int | None = None

        def __enter__(self) -> None:
            if self.idx is not None:
                self.prev = b.current_device()
                b.set_device(self.idx)

        def __exit__(self, *exc: object) -> None:
            if self.prev is not None:
                b.set_device(self.prev)

    return Redirect(torch.cuda, "device", device, "device", api, port_hint(api), record=False)


def cuda_module_redirects(s: Server) -> list[Redirect]:
    """Every redirect of ``torch.cuda.*`` for the backend ``s`` serves."""
    out = []
    b = s.backend
    hot = dict(b.hot_bindings())
    for row in ROWS:
        original = getattr(torch.cuda, row.name, None)
        if original is None:
            continue
        api = f"torch.cuda.{row.name}"
        hint = port_hint(api)
        fast = (hot.get(row.fast) or getattr(b, row.fast)) if row.fast else None
        neutral = row.neutral_of(b) if row.neutral_of else row.neutral
        impl = row.serve.build(b, s.translator.index)
        replacement = s.function(api, original, impl, row.category, hint, neutral, noop=row.noop, fast=fast)
        out.append(Redirect(torch.cuda, row.name, replacement, row.category, api, hint, record=False))
        if row.category == "rng" and getattr(torch.cuda.random, row.name, None) is original:
            # the same function reached as torch.cuda.random.<name> (transformers' Trainer does)
            out.append(Redirect(torch.cuda.random, row.name, replacement, row.category, api, hint, record=False))
    for name, feature in CLASSES.items():
        out.append(_class_redirect(s, name, feature))
    out.append(_device_context(s))
    if s.backend.device_type != CUDA:
        for name in getattr(torch.cuda, "__all__", ()):
            fn = getattr(torch.cuda, name, None)
            if name in _SERVED or name in _LEFT_ALONE or not inspect.isfunction(fn):
                continue
            api = f"torch.cuda.{name}"
            hint = port_hint(api)
            out.append(Redirect(torch.cuda, name, s.unsupported(api, fn, hint), "unsupported", api, hint, record=False))
    return out


