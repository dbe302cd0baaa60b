"""Redirects for a module that ``import torch`` does not load: installed when the program imports it.

``torch.distributed.fsdp`` costs about a second to import, half of ``import torch``; a redirect
that imported it to patch ``FullyShardedDataParallel`` would charge that to every ``accel run``,
FSDP or not. A :class:`Deferred` names the module and builds its redirects; :func:`watch`
installs them right after the module's own code has run, through
:func:`accel_abstraction.integrations.post_import.when_imported` (at once where the module is
already imported), and :func:`unwatch` stops waiting and puts back every attribute they
replaced, like the rest of the redirect's undo.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType

from ..integrations.post_import import forget, when_imported
from .patches import Patcher
from .spec import Redirect

__all__ = ["Deferred", "Watch", "unwatch", "watch"]


@dataclass(frozen=True)
class Deferred:
    """The redirects of one module not imported yet: ``build(module)`` makes them once it is."""

    module: str
    build: Callable[[ModuleType], list[Redirect]]


@dataclass
class Watch:
    """What :func:`watch` set up: the callbacks still waiting and what was installed so far."""

    waiting: list[tuple[str, Callable[[ModuleType], None]]] = field(default_factory=list)
    patchers: list[Patcher] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    active: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, item: Deferred, module: ModuleType) -> None:
        """Install ``item``'s redirects for ``module``, unless :func:`unwatch` came first."""
        with self.lock:
            if not self.active:
                return
            redirects = item.build(module)
            patcher = Patcher()
            patcher.install(redirects)
            self.patchers.append(patcher)
            self.redirects.extend(redirects)


def watch(items: Sequence[Deferred]) -> Watch:
    """Install each item's redirects when its module is imported (at once if it already is)."""
    owner = Watch()
    for item in items:

        def callback(module: ModuleType, item: Deferred = item) -> None:
            owner.install(item, module)

        owner.waiting.append((item.module, callback))
        when_imported(item.module, callback)
    return owner


def unwatch(owner: Watch) -> None:
    """Stop waiting and put back every attribute the deferred redirects replaced (newest first)."""
    with owner.lock:
        owner.active = False
        for name, callback in owner.waiting:
            forget(name, callback)
        owner.waiting.clear()
        while owner.patchers:
            owner.patchers.pop().undo()
        owner.redirects.clear()
