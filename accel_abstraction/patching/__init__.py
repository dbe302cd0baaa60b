"""Patches that remove CUDA hard-coding from an installed PyTorch, and the tools to use them.

The series lives in ``patches/pytorch/<version>/`` (see ``patches/README.md``).

* :func:`activate` / :func:`deactivate`: serve a patched overlay's modules in place of
  the stock ones (call before ``import torch``).
* ``accel patches list | check | apply | revert`` (:mod:`.cli`) and
  ``python -m accel_abstraction.patching.run script.py`` (:mod:`.run`).

Importing this package does not import torch.
"""

from __future__ import annotations

from .errors import HunkMismatchError, PatchError, TorchVersionMismatchError
from .overlay import activate, active_finder, deactivate

__all__ = [
    "HunkMismatchError",
    "PatchError",
    "TorchVersionMismatchError",
    "activate",
    "active_finder",
    "deactivate",
]
