"""``redirect_cuda()``: run unported CUDA code on the selected backend, reversibly.

::

    import accel_abstraction as accel

    with accel.redirect_cuda() as r:     # or: r = accel.redirect_cuda(); ...; r.undo()
        train()                          # torch.cuda.*, .cuda(), device="cuda", ... served by the backend
    print(r.sites())                     # what to port

One installation is shared process-wide: the first active ``redirect_cuda`` installs the
patches, the last one to leave undoes them (a lock and a reference count), so nesting,
re-entering an object after leaving it, and threads entering and leaving concurrently
are safe. Nested redirects must ask for the same backend and options as the one that
installed the patches. The redirect serves the backend selected when it was installed.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import IO, Any

from ..errors import AccelError
from ..interface import Backend
from .caches import alias_jit_builtins, refresh_torch_caches, unalias_jit_builtins, warm_torch_caches
from .deferred import Watch, unwatch, watch
from .patches import Patcher
from .serve import Server
from .sites import Site, SiteRecorder
from .spec import Redirect
from .table import build_deferred, build_redirects

__all__ = ["redirect_cuda"]


class _Installation:
    def __init__(self, server: Server, redirects: list[Redirect]) -> None:
        self.server = server
        self.redirects = redirects
        self.patcher = Patcher()
        self.refs = 0
        self.jit_ids: list[int] = []
        self.watch: Watch | None = None  # the redirects installed when their module is imported

    def originals(self) -> list[Any]:
        """The values the installed redirects replaced (``ABSENT`` for inherited attributes)."""
        return [original for _, _, original in self.patcher.saved()]


_lock = threading.Lock()
_active: _Installation | None = None


def active_redirects() -> list[Redirect]:
    """The redirects currently installed (empty when no redirect is active), those installed on import included."""
    inst = _active
    if inst is None:
        return []
    return [*inst.redirects, *(inst.watch.redirects if inst.watch is not None else [])]


class redirect_cuda:  # noqa: N801 - used like a function: accel.redirect_cuda()
    """Redirect CUDA APIs to the selected backend from construction until :meth:`undo` (or the ``with`` block's end).

    * ``backend``: the backend to serve (default: the selected one, ``accel.backend()``).
    * ``allow_missing``: memory statistics the backend does not keep return a neutral
      value (``0``, ``{}``; resets do nothing) and are reported as ``missing``, instead of
      raising :class:`~accel_abstraction.redirect.errors.RedirectCapabilityError`.
    """

    def __init__(self, backend: Backend | None = None, *, allow_missing: bool = False) -> None:
        self._backend = backend
        self._allow_missing = allow_missing
        self._held = False
        self._recorder: SiteRecorder | None = None
        self._served: Backend | None = None
        self._acquire()

    # -------------------------------------------------------------- lifecycle

    def _acquire(self) -> None:
        global _active
        backend = self._backend
        if backend is None:
            from ..runtime import current

            backend = current()  # select before patching: the API binds the real torch callables
        with _lock:
            inst = _active
            if inst is None:
                server = Server(backend, self._allow_missing)
                inst = _Installation(server, build_redirects(server))
                warm_torch_caches()
                inst.patcher.install(inst.redirects)
                try:
                    pairs = zip(inst.originals(), (r.replacement for r in inst.redirects), strict=True)
                    inst.jit_ids = alias_jit_builtins(pairs)
                    refresh_torch_caches()
                    inst.watch = watch(build_deferred(server))
                except BaseException:
                    inst.patcher.undo()
                    unalias_jit_builtins(inst.jit_ids)
                    refresh_torch_caches()
                    raise
                _active = inst
            else:
                s = inst.server
                if s.backend is not backend or s.allow_missing != self._allow_missing:
                    raise AccelError(
                        f"a CUDA redirect to backend {s.backend.name!r} (allow_missing={s.allow_missing}) is "
                        f"already active; a nested redirect_cuda() must use the same backend and options"
                    )
            inst.refs += 1
            self._held = True
            self._recorder = inst.server.recorder
            self._served = inst.server.backend

    def undo(self) -> None:
        """Leave the redirect; the last one active restores every patched attribute. Idempotent."""
        global _active
        with _lock:
            if not self._held:
                return
            self._held = False
            inst = _active
            assert inst is not None
            inst.refs -= 1
            if inst.refs == 0:
                if inst.watch is not None:
                    unwatch(inst.watch)
                inst.patcher.undo()
                unalias_jit_builtins(inst.jit_ids)
                refresh_torch_caches()
                _active = None

    @property
    def active(self) -> bool:
        """True between construction (or re-entry) and :meth:`undo`."""
        return self._held

    def __enter__(self) -> redirect_cuda:
        if not self._held:
            self._acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.undo()

    # -------------------------------------------------------------- results

    @property
    def recorder(self) -> SiteRecorder:
        assert self._recorder is not None
        return self._recorder

    @property
    def backend(self) -> Backend:
        """The backend the redirect serves."""
        assert self._served is not None
        return self._served

    @property
    def allow_missing(self) -> bool:
        return self._allow_missing

    def sites(self) -> list[Site]:
        """Every redirected call site so far (of the installation this object joined)."""
        return self.recorder.sites()

    def report(self) -> dict[str, Any]:
        """The sites as JSON-ready data (the format of ``accel run --report json``)."""
        from .report import as_json

        b = self.backend
        return as_json(self.sites(), b.name, b.device_type, self._allow_missing)

    def print_report(self, file: IO[str] | None = None) -> None:
        """Print the sites as the table ``accel run`` prints (default: to stderr)."""
        from .report import print_table

        print_table(self.sites(), self.backend.name, self._allow_missing, file)

    def __repr__(self) -> str:
        state = "active" if self._held else "undone"
        return f"<redirect_cuda {state}, {len(self.sites())} call sites>"

