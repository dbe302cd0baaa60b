"""Run a function on a module right after it is imported (or at once, if it already is).

:func:`when_imported` is how an integration adjusts a third-party module the user's script
imports itself, without importing that module early (importing ``transformers`` costs
seconds). One finder sits on :data:`sys.meta_path` while any module is awaited; it finds the
module with the other finders, lets it execute, then calls the waiting functions.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["forget", "when_imported"]

_lock = threading.Lock()
_waiting: dict[str, list[Callable[[ModuleType], None]]] = {}
#: Awaited modules that were still executing when awaited (``accelerate.accelerator`` imports
#: ``torch``, whose autoload awaits ``accelerate.accelerator``): called back at the next import
#: after theirs has finished.
_deferred: set[str] = set()


def _initializing(module: ModuleType) -> bool:
    """Whether ``module`` is in ``sys.modules`` but its code is still executing."""
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def _finished_deferred() -> list[tuple[ModuleType, list[Callable[[ModuleType], None]]]]:
    """Pop the deferred modules whose import has finished, with their callbacks (``_lock`` held)."""
    done = []
    for name in list(_deferred):
        module = sys.modules.get(name)
        if module is None:  # its import failed: a new import is awaited as any other
            _deferred.discard(name)
        elif not _initializing(module):
            _deferred.discard(name)
            done.append((module, _waiting.pop(name, [])))
    return done


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds an awaited module with the other finders and wraps its loader's ``exec_module``."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        with _lock:
            finished = _finished_deferred()
            callbacks = _waiting.pop(name, None) if name not in _deferred else None
            if not _waiting and self in sys.meta_path:
                sys.meta_path.remove(self)
        for module, waiting in finished:
            for callback in waiting:
                callback(module)
        if callbacks is None:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None and finder is not self else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:  # a legacy loader: call back once the import has finished instead
            return spec

        def exec_then_call(module: ModuleType) -> None:
            exec_module(module)
            for callback in callbacks:
                callback(module)

        loader.exec_module = exec_then_call  # type: ignore[union-attr]
        return spec


_finder = _AfterImport()


def when_imported(name: str, callback: Callable[[ModuleType], None]) -> None:
    """Call ``callback(module)`` once module ``name`` has been imported; at once if it is already.

    Called from inside the import of ``name`` itself (``name`` imports ``torch``, whose autoload
    awaits ``name``), the callback runs at the next import after ``name``'s has finished, when
    the module is whole. An exception from ``callback`` propagates to the import statement that
    triggered it (or to this call): callbacks must be correct, not defensive.
    """
    module = sys.modules.get(name)
    if module is not None and not _initializing(module):
        callback(module)
        return
    with _lock:
        _waiting.setdefault(name, []).append(callback)
        if module is not None:  # mid-import (this call comes from inside it): after it finishes
            _deferred.add(name)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)


def forget(name: str, callback: Callable[[ModuleType], None]) -> bool:
    """Stop waiting with ``callback`` for module ``name``; whether it was still waiting.

    A callback already called (or being called) is not undone: its caller undoes what it did.
    """
    with _lock:
        waiting = _waiting.get(name, [])
        if callback not in waiting:
            return False
        waiting.remove(callback)
        if not waiting:
            _waiting.pop(name, None)
            _deferred.discard(name)
        if not _waiting and _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
        return True
