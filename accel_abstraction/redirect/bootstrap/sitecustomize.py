"""Start-up hook of ``accel run`` for child processes; on ``PYTHONPATH`` only while ``accel run`` runs.

Python imports ``sitecustomize`` at start-up. When ``ACCEL_REDIRECT`` is set (by ``accel
run``, for its children: ``torchrun`` workers, ``mp.spawn`` and ``spawn`` DataLoader
workers, ``subprocess`` of ``sys.executable``), this waits for ``torch`` to be imported
and then installs the CUDA redirect in the child
(:func:`accel_abstraction.redirect.children.install_in_child`). A process that never
imports torch pays for one environment lookup. The ``sitecustomize`` this file shadows,
if any, is run afterwards.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType


def _install(torch: ModuleType) -> None:
    """Install the redirect in this child once ``torch`` has loaded; a failure is said, never raised."""
    try:
        from accel_abstraction.redirect.children import install_in_child

        install_in_child()
    except Exception as exc:  # noqa: BLE001 - a child must still run, and say why it is not redirected
        print(f"accel run: the CUDA redirect was not installed in process {os.getpid()}: {exc}", file=sys.stderr)


def _chain() -> None:
    """Run the ``sitecustomize`` this one shadows (a distribution's or a virtualenv's)."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


# Read with os.environ, not accel_abstraction.environment.read: this file runs at the start of
# every Python process whose PYTHONPATH holds the bootstrap folder, maybe an interpreter without
# accel_abstraction, and must import nothing of it unless the redirect is asked for. One of the
# two allowed raw reads (tests/core/test_settings_docs.py RAW_READS_ALLOWED).
if os.environ.get("ACCEL_REDIRECT"):
    from accel_abstraction.integrations.post_import import when_imported

    when_imported("torch", _install)
_chain()
