"""The selected backend of this process: chosen once, thread-safely, then bound into the public API.

Selection happens on first use (or :func:`use`). The public functions of
``accel_abstraction`` are then rebound to the backend's methods (or to the torch
callables its ``hot_bindings()`` hands out), so every later ``accel.synchronize()`` costs
one module attribute lookup and one call: no plugin-manager dispatch, no lock.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .api import BOUND
from .arguments import guard
from .errors import PLUGIN_ATTR, CapabilityError, DeviceIndexError, PluginError
from .interface import Backend
from .plugins import get_host
from .sections import CORE, CoreSettings
from .selection import Selection, select_backend

__all__ = ["BOUND_NAMES", "bound_callable", "current", "selection", "use", "using"]

#: Public names of ``accel_abstraction`` rebound to the selected backend (the API table's "bound" rows).
BOUND_NAMES: tuple[str, ...] = BOUND

_lock = threading.RLock()
#: Held for the whole of a ``using`` block, so blocks in different threads run one after another.
_using_lock = threading.RLock()
_selection: Selection | None = None
_settings: CoreSettings | None = None


def _api_module() -> Any:
    return sys.modules["accel_abstraction"]


def _bind(backend: Backend | None) -> None:
    """Point the public functions at ``backend`` (``None``: back to the lazy stubs)."""
    api = _api_module()
    stubs: dict[str, Callable[..., Any]] = api._STUBS
    if backend is None:
        for name, stub in stubs.items():
            setattr(api, name, stub)
        return
    hot = dict(backend.hot_bindings())
    for name in BOUND_NAMES:
        try:
            setattr(api, name, bound_callable(backend, name, hot))
        except CapabilityError:  # Stream/Event of a backend without them: the stub raises it at each call
            setattr(api, name, stubs[name])
    device_type = backend.device_type
    api.device_type = lambda: device_type
    api.backend = lambda: backend


def bound_callable(
    backend: Backend, name: str, hot: Mapping[str, Callable[..., Any]] | None = None
) -> Callable[..., Any]:
    """What ``accel.<name>`` is bound to for ``backend``: its hot binding from ``hot`` (default: the
    backend's method), with the argument checks of :mod:`.arguments` where ``name`` has any."""
    fn = (hot or {}).get(name) or getattr(backend, name)
    if name in _OUTSIDE_USING:
        return _waiting_for_using_blocks(guard(name, fn, backend), backend, name)
    return guard(name, fn, backend)


#: Bound functions that wait while another thread is inside a ``using`` block: a device
#: index is checked against (and set on) the backend selected outside the block.
_OUTSIDE_USING = frozenset({"set_device"})


def _waiting_for_using_blocks(fn: Callable[..., Any], backend: Backend, name: str) -> Callable[..., Any]:
    """``fn`` (bound for ``backend``), called once no other thread is inside a ``using`` block;
    if the selection changed while it waited (the caller held a binding of a block's backend),
    the call goes to the backend selected now."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _using_lock:  # reentrant: this thread's own blocks do not wait
            sel = _selection
            if sel is not None and sel.backend is not backend:
                return bound_callable(sel.backend, name)(*args, **kwargs)
            return fn(*args, **kwargs)

    return wrapper


def _activate(sel: Selection, settings: CoreSettings) -> None:
    backend = sel.backend
    backend.activate()
    if settings.device_index is not None:
        try:
            backend.set_device(settings.device_index)
        except DeviceIndexError as exc:
            raise DeviceIndexError(f"{exc} ({settings.source_of('device_index')})") from None
    for call in get_host().call_each("accel_backend_selected", backend=backend, settings=settings):
        error = call.error
        if error is not None and not isinstance(error, Exception):  # SystemExit & co. of a plugin: its failure
            cause = error
            error = PluginError(f"the accel_backend_selected hook of plugin {call.plugin!r} raised {type(cause).__name__}: {cause}")
            error.__cause__ = cause
            setattr(error, PLUGIN_ATTR, call.plugin)
        if error is not None:
            # Propagates unchanged to library callers (as the hook documents); marked with the
            # plugin it came from so that a CLI can print one line naming it.
            if not hasattr(error, PLUGIN_ATTR):
                setattr(error, PLUGIN_ATTR, call.plugin)
                error.add_note(f"raised by the accel_backend_selected hook of plugin {call.plugin!r}")
            raise error


def use(name: str | None = None, **overrides: Any) -> Backend:
    """Select a backend for the whole process and return it.

    ``name`` (or ``backend=``) and any other setting given here take precedence over
    ``ACCEL_*`` variables and ``[tool.accel]``. With no arguments, selects from the
    configuration. Raises :class:`~accel_abstraction.errors.ConfigError`,
    :class:`~accel_abstraction.errors.UnknownBackendError` or
    :class:`~accel_abstraction.errors.BackendUnavailableError`.
    """
    global _selection, _settings
    if name is not None:
        overrides["backend"] = name
    with _lock:
        settings = CORE.load(**overrides)
        host = get_host()
        sel = select_backend(host.registry, settings)
        _activate(sel, settings)
        _selection, _settings = sel, settings
        _bind(sel.backend)
        return sel.backend


def current() -> Backend:
    """The selected backend, selecting it from the configuration on first call."""
    sel = _selection
    if sel is None:
        with _lock:
            if _selection is None:
                use()
            sel = _selection
    assert sel is not None
    return sel.backend


def selection() -> Selection:
    """How the current backend was chosen (selecting it first if needed)."""
    current()
    assert _selection is not None
    return _selection


@contextlib.contextmanager
def using(name: str, **overrides: Any) -> Iterator[Backend]:
    """Select backend ``name`` inside a ``with`` block; the previous selection is restored after.

    Process-wide, not per-thread (a thread-local would put a lookup on every call). So
    that concurrent blocks cannot leave the process on the wrong backend, ``using`` blocks
    are serialized: a thread entering one waits until a block held by another thread
    has exited (blocks nest freely within one thread). Do not wait inside a block for
    another thread that enters a ``using`` block itself: that deadlocks. :func:`use` does
    not wait for blocks; calling it from another thread during one changes the selection
    for that block too, and the block restores its own predecessor when it exits.
    """
    _using_lock.acquire()
    try:
        with _lock:
            previous, previous_settings = _selection, _settings
            backend = use(name, **overrides)
    except BaseException:
        _using_lock.release()
        raise
    try:
        yield backend
    finally:
        try:
            _restore(previous, previous_settings)
        finally:
            _using_lock.release()


def _restore(previous: Selection | None, previous_settings: CoreSettings | None) -> None:
    """Make ``previous`` the selection again (``None``: nothing selected), as a ``using`` block exits."""
    global _selection, _settings
    with _lock:
        _selection, _settings = previous, previous_settings
        if previous is None:
            _bind(None)
        else:
            assert previous_settings is not None
            _activate(previous, previous_settings)
            _bind(previous.backend)


def reset() -> None:
    """Forget the selection; the next call selects again. For tests."""
    global _selection, _settings
    with _lock:
        _selection = _settings = None
        _bind(None)
