"""Redirects for the ``torch.cuda`` module: each function the backend interface covers.

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
from collections.abc import Callable
from typing import Any

import torch

from .device_info import capability_of, properties_of
from .devices import CUDA
from .hints import port_hint
from .serve import NO_NEUTRAL, Server
from .spec import Redirect
from .timing import host_event_class

__all__ = ["cuda_module_redirects"]

#: torch.cuda functions left alone even when unsupported (harmless, true answers on any build).
_LEFT_ALONE = frozenset({"is_initialized"})


def _table(s: Server) -> dict[str, tuple[Callable[..., Any], str, Any]]:
    """name -> (impl, category, neutral value under allow_missing); hints come from the porting mapping table."""
    b = s.backend
    idx = s.translator.index
    no = NO_NEUTRAL
    available = b.is_available()  # fixed while the backend is selected; availability() is not free
    return {
        # identity
        "is_available": (lambda: available, "device", no),
        "device_count": (lambda: b.device_count(), "device", no),
        "current_device": (lambda: b.current_device(), "device", no),
        "set_device": (lambda device: b.set_device(idx(device)), "device", no),
        "get_device_name": (lambda device=None: b.device_name(idx(device)), "device", no),
        # execution
        "synchronize": (lambda device=None: b.synchronize(idx(device)), "execution", no),
        "current_stream": (lambda device=None: b.current_stream(idx(device)), "execution", no),
        "stream": (lambda stream: b.stream(stream), "execution", no),
        # no CUDA graph is ever being captured on the backend (transformers asks on every step)
        "is_current_stream_capturing": (lambda: False, "execution", no),
        # memory
        "memory_allocated": (lambda device=None: b.memory_allocated(idx(device)), "memory", 0),
        "max_memory_allocated": (
            lambda device=None: b.max_memory_allocated(idx(device)), "memory", 0,
        ),
        "memory_reserved": (lambda device=None: b.memory_reserved(idx(device)), "memory", 0),
        "max_memory_reserved": (
            lambda device=None: b.max_memory_reserved(idx(device)), "memory", 0,
        ),
        "memory_cached": (lambda device=None: b.memory_reserved(idx(device)), "memory", 0),
        "max_memory_cached": (
            lambda device=None: b.max_memory_reserved(idx(device)), "memory", 0,
        ),
        "reset_peak_memory_stats": (
            lambda device=None: b.reset_peak_memory_stats(idx(device)), "memory", None,
        ),
        "reset_max_memory_allocated": (
            lambda device=None: b.reset_peak_memory_stats(idx(device)), "memory", None,
        ),
        "empty_cache": (lambda: b.empty_cache(), "memory", None),  # a no-op without a cache (_NOOPS)
        "memory_stats": (lambda device=None: b.memory_stats(idx(device)), "memory", dict),
        "mem_get_info": (lambda device=None: b.mem_get_info(idx(device)), "memory", no),
        # RNG
        "manual_seed": (lambda seed: b.manual_seed(seed), "rng", no),
        "manual_seed_all": (lambda seed: b.manual_seed_all(seed), "rng", no),
        "seed": (lambda: b.seed(), "rng", no),
        "seed_all": (lambda: b.seed(), "rng", no),
        "initial_seed": (lambda: b.initial_seed(), "rng", no),
        "get_rng_state": (lambda device=CUDA: b.get_rng_state(idx(device)), "rng", no),
        "set_rng_state": (
            lambda new_state, device=CUDA: b.set_rng_state(new_state, idx(device)), "rng", no,
        ),
        "get_rng_state_all": (lambda: b.get_rng_state_all(), "rng", no),
        "set_rng_state_all": (lambda new_states: b.set_rng_state_all(new_states), "rng", no),
        # AMP support queries
        "is_bf16_supported": (lambda including_emulation=True: b.is_bf16_supported(), "amp", no),
        # hardware description (see device_info)
        "get_device_properties": (
            lambda device=None: properties_of(b, idx(device)), "device", lambda: properties_of(b, None, total_memory=0),
        ),
        "get_device_capability": (lambda device=None: capability_of(b), "device", no),
    }  # fmt: skip

#: Functions whose neutral value is the right answer when the backend lacks the feature.
_NOOPS = frozenset({"empty_cache"})

#: torch.cuda function -> the public API function that serves its call without arguments
#: (bound to the backend's fastest callable: ``backend.hot_bindings()``).
_FAST = {
    "synchronize": "synchronize", "device_count": "device_count", "current_device": "current_device",
    "memory_allocated": "memory_allocated", "max_memory_allocated": "max_memory_allocated",
    "memory_reserved": "memory_reserved", "max_memory_reserved": "max_memory_reserved",
    "memory_cached": "memory_reserved", "max_memory_cached": "max_memory_reserved",
    "reset_peak_memory_stats": "reset_peak_memory_stats", "reset_max_memory_allocated": "reset_peak_memory_stats",
    "memory_stats": "memory_stats", "initial_seed": "initial_seed", "get_rng_state": "get_rng_state",
}  # fmt: skip


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
    table = _table(s)
    hot = dict(s.backend.hot_bindings())
    for name, (impl, category, neutral) in table.items():
        original = getattr(torch.cuda, name, None)
        if original is None:
            continue
        api = f"torch.cuda.{name}"
        hint = port_hint(api)
        public = _FAST.get(name)
        fast = (hot.get(public) or getattr(s.backend, public)) if public else None
        replacement = s.function(api, original, impl, category, hint, neutral, noop=name in _NOOPS, fast=fast)
        out.append(Redirect(torch.cuda, name, replacement, category, api, hint, record=False))
        if category == "rng" and getattr(torch.cuda.random, name, None) is original:
            # the same function reached as torch.cuda.random.<name> (transformers' Trainer does)
            out.append(Redirect(torch.cuda.random, name, replacement, category, api, hint, record=False))
    out.append(_class_redirect(s, "Stream", "streams"))
    out.append(_class_redirect(s, "Event", "events"))
    out.append(_device_context(s))
    if s.backend.device_type != CUDA:
        for name in getattr(torch.cuda, "__all__", ()):
            fn = getattr(torch.cuda, name, None)
            if name in table or name in _LEFT_ALONE or not inspect.isfunction(fn):
                continue
            api = f"torch.cuda.{name}"
            hint = port_hint(api)
            out.append(Redirect(torch.cuda, name, s.unsupported(api, fn, hint), "unsupported", api, hint, record=False))
    return out


