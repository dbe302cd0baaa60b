"""The full list of redirects for one backend: the core's CUDA table, then the plugins'.

Plugins contribute through the ``accel_redirects(backend, register)`` hook; a plugin's
:class:`Redirect` replaces a core one with the same ``(target, name)``. A plugin whose hook
raises or registers something else contributes nothing (a warning names it); the core's
redirects and the other plugins' stay. A plugin function
with ``record=True`` is wrapped like a core one (user calls counted, internal calls get
the original).
"""

from __future__ import annotations

import inspect

from ..errors import PluginError
from .amp import amp_redirects
from .cuda_module import cuda_module_redirects
from .data import data_redirects
from .data_parallel import data_parallel_redirects
from .deferred import Deferred
from .dist import dist_deferred, dist_redirects
from .knobs import knob_redirects
from .nvtx import nvtx_redirects
from .serve import Server
from .spec import Redirect
from .tensors import tensor_redirects

__all__ = ["build_deferred", "build_redirects", "plugin_redirects"]


def plugin_redirects(s: Server) -> list[Redirect]:
    """Redirects contributed by plugins for ``s.backend``, wrapped for recording where asked."""
    from ..plugins import get_host

    def check(item: object) -> None:
        if not isinstance(item, Redirect):
            raise PluginError(f"register() takes an accel_abstraction.redirect.Redirect, got {item!r}")

    out = []
    for _plugin, r in get_host().collect("accel_redirects", check, backend=s.backend):
        if r.record and inspect.isfunction(r.replacement):
            original = getattr(r.target, r.name, None)
            if original is not None:
                wrapped = s.function(r.label, original, r.replacement, r.category, r.hint)
                r = Redirect(r.target, r.name, wrapped, r.category, r.label, r.hint, record=False)
            else:
                s.recorder.describe(r.label, r.category, r.hint)
        out.append(r)
    return out


def build_redirects(s: Server) -> list[Redirect]:
    """Every redirect to install for ``s.backend``: one per ``(target, name)``, plugins last (they win)."""
    table: dict[tuple[int, str], Redirect] = {}
    core = (
        cuda_module_redirects(s) + tensor_redirects(s) + amp_redirects(s) + dist_redirects(s)
        + knob_redirects(s) + nvtx_redirects(s) + data_redirects(s) + data_parallel_redirects(s)
    )  # fmt: skip
    for r in core + plugin_redirects(s):
        table[(id(r.target), r.name)] = r
    return list(table.values())


def build_deferred(s: Server) -> list[Deferred]:
    """The redirects installed when the program imports their module (:mod:`.deferred`)."""
    return dist_deferred(s)
