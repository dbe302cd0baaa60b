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
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from .device_info import capability_of, properties_of
from .devices import CUDA
from .hints import port_hint
from .serve import NO_NEUTRAL, Server
from .spec import Redirect
from .timing import host_event_class

if TYPE_CHECKING:
    from ..interface import Backend

__all__ = ["ROWS", "CudaRow", "Serve", "cuda_module_redirects"]

#: torch.cuda functions left alone even when unsupported (harmless, true answers on any build).
_LEFT_ALONE = frozenset({"is_initialized"})


Index = Callable[[Any], Any]
"""The server's device translator: a CUDA device argument -> the backend's index."""


class Serve(NamedTuple):
    """How a row is served: ``build(backend, index)`` makes the replacement's implementation
    for the selected backend; ``text`` says it in the docs (``backend.memory_allocated(device)``)."""

    build: Callable[[Backend, Index], Callable[..., Any]]
    text: str


def _no_args(method: str) -> Serve:
    def build(b: Backend, idx: Index) -> Callable[..., Any]:
        fn = getattr(b, method)
        return lambda: fn()

    return Serve(build, f"backend.{method}()")


def _per_device(method: str, default: Any = None) -> Serve:
    """``f(device=None)`` served as ``backend.method(index)``."""

    def build(b: Backend, idx: Index) -> Callable[..., Any]:
        fn = getattr(b, method)
        return lambda device=default: fn(idx(device))

    return Serve(build, f"backend.{method}(device)")


def _passed_on(method: str) -> Serve:
    """``f(value)`` served as ``backend.method(value)`` (a seed, a stream, a list of states)."""

    def build(b: Backend, idx: Index) -> Callable[..., Any]:
        fn = getattr(b, method)
        return lambda value: fn(value)

    return Serve(build, f"backend.{method}(value)")


def _available(b: Backend, idx: Index) -> Callable[..., Any]:
    available = b.is_available()  # fixed while the backend is selected; availability() is not free
    return lambda: available


def _set_device(b: Backend, idx: Index) -> Callable[..., Any]:
    return lambda device: b.set_device(idx(device))


def _set_rng_state(b: Backend, idx: Index) -> Callable[..., Any]:
    return lambda new_state, device=CUDA: b.set_rng_state(new_state, idx(device))


def _never_capturing(b: Backend, idx: Index) -> Callable[..., Any]:
    return lambda: False


def _bf16(b: Backend, idx: Index) -> Callable[..., Any]:
    return lambda including_emulation=True: b.is_bf16_supported()


def _properties(b: Backend, idx: Index) -> Callable[..., Any]:
    return lambda device=None: properties_of(b, idx(device))


def _capability(b: Backend, idx: Index) -> Callable[..., Any]:
    return lambda device=None: capability_of(b)


class CudaRow(NamedTuple):
    """One redirected ``torch.cuda`` function: adding one is adding a row to :data:`ROWS`."""

    name: str
    """``torch.cuda.<name>``."""
    category: str
    """Report category: device, execution, memory, rng, amp."""
    serve: Serve
    neutral: Any = NO_NEUTRAL
    """Served under ``--allow-missing`` on a backend without the feature (a callable: called);
    ``NO_NEUTRAL``: none, the call fails with a capability error."""
    fast: str = ""
    """The public API function that serves a call without arguments (its hot binding)."""
    noop: bool = False
    """The neutral value is the right answer without ``--allow-missing`` (emptying a cache the backend does not keep)."""
    neutral_of: Callable[[Backend], Any] | None = None
    """Instead of ``neutral``: the neutral value for the selected backend."""


def _properties_without_memory(b: Backend) -> Callable[[], Any]:
    return lambda: properties_of(b, None, total_memory=0)


#: Every redirected ``torch.cuda`` function; hints come from the porting mapping table.
ROWS: tuple[CudaRow, ...] = (
    # identity
    CudaRow("is_available", "device", Serve(_available, "backend.is_available() at selection")),
    CudaRow("device_count", "device", _no_args("device_count"), fast="device_count"),
    CudaRow("current_device", "device", _no_args("current_device"), fast="current_device"),
    CudaRow("set_device", "device", Serve(_set_device, "backend.set_device(device)")),
    CudaRow("get_device_name", "device", _per_device("device_name")),
    # execution
    CudaRow("synchronize", "execution", _per_device("synchronize"), fast="synchronize"),
    CudaRow("current_stream", "execution", _per_device("current_stream")),
    CudaRow("stream", "execution", _passed_on("stream")),
    # no CUDA graph is ever being captured on the backend (transformers asks on every step)
    CudaRow("is_current_stream_capturing", "execution", Serve(_never_capturing, "False: no CUDA graph is captured")),
    # memory
    CudaRow("memory_allocated", "memory", _per_device("memory_allocated"), 0, fast="memory_allocated"),
    CudaRow("max_memory_allocated", "memory", _per_device("max_memory_allocated"), 0, fast="max_memory_allocated"),
    CudaRow("memory_reserved", "memory", _per_device("memory_reserved"), 0, fast="memory_reserved"),
    CudaRow("max_memory_reserved", "memory", _per_device("max_memory_reserved"), 0, fast="max_memory_reserved"),
    CudaRow("memory_cached", "memory", _per_device("memory_reserved"), 0, fast="memory_reserved"),
    CudaRow("max_memory_cached", "memory", _per_device("max_memory_reserved"), 0, fast="max_memory_reserved"),
    CudaRow("reset_peak_memory_stats", "memory", _per_device("reset_peak_memory_stats"), None, fast="reset_peak_memory_stats"),
    CudaRow("reset_max_memory_allocated", "memory", _per_device("reset_peak_memory_stats"), None, fast="reset_peak_memory_stats"),
    CudaRow("empty_cache", "memory", _no_args("empty_cache"), None, noop=True),
    CudaRow("memory_stats", "memory", _per_device("memory_stats"), dict, fast="memory_stats"),
    CudaRow("mem_get_info", "memory", _per_device("mem_get_info")),
    # RNG
    CudaRow("manual_seed", "rng", _passed_on("manual_seed")),
    CudaRow("manual_seed_all", "rng", _passed_on("manual_seed_all")),
    CudaRow("seed", "rng", _no_args("seed")),
    CudaRow("seed_all", "rng", _no_args("seed")),
    CudaRow("initial_seed", "rng", _no_args("initial_seed"), fast="initial_seed"),
    CudaRow("get_rng_state", "rng", _per_device("get_rng_state", CUDA), fast="get_rng_state"),
    CudaRow("set_rng_state", "rng", Serve(_set_rng_state, "backend.set_rng_state(new_state, device)")),
    CudaRow("get_rng_state_all", "rng", _no_args("get_rng_state_all")),
    CudaRow("set_rng_state_all", "rng", _passed_on("set_rng_state_all")),
    # AMP support queries
    CudaRow("is_bf16_supported", "amp", Serve(_bf16, "backend.is_bf16_supported()")),
    # hardware description (see device_info)
    CudaRow("get_device_properties", "device", Serve(_properties, "device_info.properties_of(backend, device)"), neutral_of=_properties_without_memory),
    CudaRow("get_device_capability", "device", Serve(_capability, "device_info.capability_of(backend)")),
)  # fmt: skip


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
    out.append(_class_redirect(s, "Stream", "streams"))
    out.append(_class_redirect(s, "Event", "events"))
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


