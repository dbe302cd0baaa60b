"""Module attributes served from submodules on first access (keeps package imports cheap)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any


def torch_first() -> None:
    """Import torch (when installed and not imported yet) before importing a module of ours that needs it.

    ``import torch`` ends by calling the ``torch.backends`` entry points, and a backend plugin's
    (one that sets its device up at ``import torch``) selects the configured backend, which
    imports :mod:`accel_abstraction.runtime` and :mod:`accel_abstraction.interface`. Were torch first
    imported by one of our modules, that module would still be half-initialized then (the import
    cycle interface -> arguments -> torch -> autoload -> runtime -> interface). Called by the entry
    points that import such a module (the package's lazy attributes and backend functions, the
    CLI's commands), it makes torch's import run with every module of ours whole or not started.
    """
    if "torch" not in sys.modules:
        try:
            import torch  # noqa: F401
        except ModuleNotFoundError:
            pass  # the module that needs it raises the MissingDependencyError that says how to install it


def lazy_getattr(
    package: str, table: Mapping[str, str], namespace: dict[str, Any], torch_free: Collection[str] = ()
) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``name`` from ``package.<table[name]>``, cached in ``namespace``.

    A submodule not in ``torch_free`` is imported after torch (:func:`torch_first`).
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module not in torch_free:
            torch_first()
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    return __getattr__
