"""What every redirect shares: the backend it serves, the device translator, the site recorder.

:meth:`Server.function` builds the replacement of one CUDA function: a call from user code
is counted and served by ``impl`` (through the backend object); a call from torch,
accel-abstraction or the backend's plugin gets the original function, so torch's own
CUDA checks keep seeing the real torch and a backend implemented on ``torch.cuda`` never
recurses into its own redirect. A :class:`~accel_abstraction.errors.CapabilityError` from
the backend becomes a :class:`RedirectCapabilityError` naming the CUDA API and the call
site; with ``allow_missing`` an API that has a neutral value (memory statistics: ``0``,
``{}``, nothing to reset) returns it instead and its site is reported as ``missing``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch.compiler import is_dynamo_compiling as is_compiling

from ..errors import CapabilityError
from ..interface import Backend
from .devices import DeviceTranslator
from .errors import RedirectCapabilityError
from .sites import FAILED, MISSING, NOOP, SiteRecorder
from .spec import Redirect

__all__ = ["NO_NEUTRAL", "Server"]

_getframe = sys._getframe

NO_NEUTRAL = object()
_NEUTRAL_FEATURES = frozenset({"memory_stats"})


def _package_dir(module_name: str) -> str | None:
    top = sys.modules.get(module_name.partition(".")[0])
    path = getattr(top, "__file__", None)
    return os.path.dirname(path) if path else None


class Server:
    """The selected backend plus the helpers a redirect needs to serve CUDA calls with it."""

    def __init__(self, backend: Backend, allow_missing: bool = False) -> None:
        import accel_abstraction

        self.backend = backend
        self.allow_missing = allow_missing
        self.translator = DeviceTranslator(backend)
        dirs = [os.path.dirname(torch.__file__), os.path.dirname(accel_abstraction.__file__)]
        plugin_dir = _package_dir(type(backend).__module__)
        if plugin_dir:
            dirs.append(plugin_dir)
        self.recorder = SiteRecorder(dirs)

    # -------------------------------------------------------------- errors

    def capability_error(
        self, api: str, exc: CapabilityError | None, key: Any, feature: str = "", todo: str = ""
    ) -> RedirectCapabilityError:
        """The error for ``api`` failing at site ``key``; marks the site ``failed``."""
        self.recorder.mark(key, FAILED)
        reason = ""
        if exc is not None:
            feature, reason = exc.feature, exc.reason
        if feature in _NEUTRAL_FEATURES and not todo:
            todo = (
                "port this call with `accel port`, guard it with accel.capabilities(), or run with "
                "`accel run --allow-missing` (redirect_cuda(allow_missing=True)) to get 0 and have it reported"
            )
        return RedirectCapabilityError(api, self.backend.name, feature or api, reason, self.recorder.where(key), todo)

    # -------------------------------------------------------------- building replacements

    def function(
        self,
        api: str,
        original: Callable[..., Any],
        impl: Callable[..., Any],
        category: str,
        hint: str = "",
        neutral: Any = NO_NEUTRAL,
        noop: bool = False,
        fast: Callable[[], Any] | None = None,
    ) -> Callable[..., Any]:
        """The replacement for the CUDA function ``original`` (see the module docstring).

        ``noop``: when the backend lacks the feature, ``neutral`` is the right answer even
        without ``allow_missing`` (emptying a cache the backend does not keep); the site is
        reported as ``no-op``. ``fast``: what serves a call without arguments (the public
        API's binding of the same function, same meaning), skipping ``impl``'s argument handling.
        """
        rec = self.recorder
        rec.describe(api, category, hint)
        internal, cell_of, classify = rec._internal, rec.cell, rec._classify
        server = self
        # (code, offset, cell, key) of the last user site: replaced as a whole, so threads never mix fields
        last: tuple[Any, int, list[int], Any] = (None, -1, [0], None)

        def replacement(*args: Any, **kwargs: Any) -> Any:
            nonlocal last
            # SiteRecorder.enter, inlined: this runs on every call
            if is_compiling():
                key: Any = ()
            else:
                frame = _getframe(1)
                code = frame.f_code
                seen = last
                if seen[0] is code and seen[1] == frame.f_lasti:
                    seen[2][0] += 1  # the same site as last time (a loop)
                    key = seen[3]
                else:
                    flag = internal.get(id(code))
                    if flag is None:
                        flag = classify(code, frame)
                    if flag:
                        return original(*args, **kwargs)
                    key = (id(code), frame.f_lasti, api)
                    cell = cell_of(key)
                    cell[0] += 1
                    last = (code, key[1], cell, key)
            try:
                if fast is not None and not args and not kwargs:
                    return fast()
                return impl(*args, **kwargs)
            except RedirectCapabilityError:
                raise
            except CapabilityError as exc:
                if noop:
                    rec.mark(key, NOOP)
                    return neutral() if callable(neutral) else neutral
                if neutral is not NO_NEUTRAL and server.allow_missing:
                    rec.mark(key, MISSING)
                    return neutral() if callable(neutral) else neutral
                raise server.capability_error(api, exc, key) from exc

        functools.update_wrapper(replacement, original)
        replacement.__accel_redirect__ = api  # type: ignore[attr-defined]
        return replacement

    def redirects(
        self, target: Any, prefix: str, impls: dict[str, Callable[..., Any]], category: str, hint: str
    ) -> list[Redirect]:
        """A :meth:`function` redirect of ``target.<name>`` for each ``name -> impl`` that ``target`` has."""
        out = []
        for name, impl in impls.items():
            original = getattr(target, name, None)
            if original is not None:
                api = f"{prefix}.{name}"
                fn = self.function(api, original, impl, category, hint)
                out.append(Redirect(target, name, fn, category, api, hint, record=False))
        return out

    def unsupported(self, api: str, original: Callable[..., Any], reason: str) -> Callable[..., Any]:
        """A replacement that raises :class:`RedirectCapabilityError` for user calls; ``reason``: the table's hint."""

        rec = self.recorder
        rec.describe(api, "unsupported", reason)
        enter = rec.enter
        todo = "the backend interface has no equivalent of it; remove or guard this call"

        def replacement(*args: Any, **kwargs: Any) -> Any:
            key = enter(api)
            if key is None:
                return original(*args, **kwargs)
            raise self.capability_error(api, None, key, api, todo=todo + (f" ({reason})" if reason else ""))

        functools.update_wrapper(replacement, original)
        replacement.__accel_redirect__ = api  # type: ignore[attr-defined]
        return replacement
