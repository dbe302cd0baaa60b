"""Imports of dependencies that one distribution of accel-abstraction may lack, with a clear error.

The core distribution installs without torch and without libcst (see ``docs/install.md``):
``accel scan`` and the pre-commit hook run in environments that have neither. Code that
needs one catches the import error and raises :func:`missing`'s answer, so a missing package ends in one
:class:`~accel_abstraction.errors.MissingDependencyError` that says what needs it and how
to install it, never in a bare ``ModuleNotFoundError`` from deep inside the library.
"""

from __future__ import annotations

import sys

from .errors import MissingDependencyError

__all__ = ["INSTALL_HINTS", "missing"]

#: Top-level module -> how to get it. One table, used by every :func:`missing` call.
INSTALL_HINTS: dict[str, str] = {
    "torch": (
        "install the PyTorch build for your accelerator (https://pytorch.org/get-started/locally/), "
        "or a backend plugin, which declares it: pip install accel-cpu (or accel-cuda, accel-neuron)"
    ),
    "libcst": "pip install 'accel-abstraction[port]' (or: pip install libcst)",
}


def missing(exc: ModuleNotFoundError, module: str, needed_for: str) -> Exception:
    """What to raise for ``exc``, caught while importing ``module``::

        try:
            import torch
        except ModuleNotFoundError as exc:
            raise missing(exc, "torch", "the accelerator runtime") from None

    A :class:`MissingDependencyError` saying what needs ``module`` and how to install it, or
    ``exc`` itself when ``module`` is installed and one of *its* imports failed.
    """
    if exc.name is None or exc.name.split(".")[0] != module.split(".")[0]:
        return exc
    hint = INSTALL_HINTS.get(module, f"pip install {module}")
    return MissingDependencyError(
        f"{module} is not installed for Python {sys.version.split()[0]} at {sys.executable}; "
        f"it is needed for {needed_for}: {hint}"
    )
