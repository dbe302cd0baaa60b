"""Serve the patched modules of an overlay in place of the installed ones.

An overlay (see :func:`.apply.write_overlay`) is a directory holding a partial ``torch``
tree: only the modules the patch series changes, plus ``manifest.json``.
:func:`activate` puts a finder first on :data:`sys.meta_path` that answers for exactly
those module names (``torch.amp.grad_scaler``, ...) with the overlay's file; every other
module, ``torch`` itself included, is found and loaded as usual.

It must run before ``import torch``: a module already imported keeps its stock code, so
:func:`activate` refuses when one of the overlay's modules is in :data:`sys.modules`.

Tracebacks and ``inspect.getsource`` show the overlay's files. Code that decides by file
path whether something lives inside the torch directory (dynamo's trace rules) sees these
modules as outside it; use ``accel patches apply --in-place`` where that matters.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from .errors import PatchError, TorchVersionMismatchError
from .manifest import read_manifest, sha256_of_file
from .series import installed_torch_root, torch_version_at

__all__ = ["OVERLAY_ENV", "OverlayFinder", "activate", "active_finder", "deactivate", "module_name"]

#: Environment variable naming an overlay directory for :mod:`.run` (and ``activate()``'s default).
OVERLAY_ENV = "ACCEL_TORCH_OVERLAY"


def module_name(relative_path: str) -> str:
    """``"torch/amp/grad_scaler.py"`` -> ``"torch.amp.grad_scaler"``; ``pkg/__init__.py`` -> ``"pkg"``."""
    parts = relative_path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class OverlayFinder(importlib.abc.MetaPathFinder):
    """A meta-path finder that maps exact module names to overlay source files."""

    def __init__(self, directory: Path, modules: dict[str, Path], stock_root: Path) -> None:
        self.directory = directory
        self.modules = modules
        self.stock_root = stock_root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """Return a spec for the overlay's file when ``fullname`` is one of its modules, else ``None``."""
        file = self.modules.get(fullname)
        if file is None:
            return None
        search = None
        if file.name == "__init__.py":  # a package: its submodules still come from the stock tree
            search = [str(self.stock_root / fullname.replace(".", "/"))]
        return importlib.util.spec_from_file_location(fullname, file, submodule_search_locations=search)

    def __repr__(self) -> str:
        return f"OverlayFinder({str(self.directory)!r}, {len(self.modules)} modules)"


def active_finder() -> OverlayFinder | None:
    """The active :class:`OverlayFinder`, or ``None``."""
    return next((f for f in sys.meta_path if isinstance(f, OverlayFinder)), None)


def _default_directory() -> Path:
    from ..environment import read
    from .apply import default_target

    env = read(OVERLAY_ENV)
    if env:
        return Path(env)
    return default_target(torch_version_at(installed_torch_root()))


def activate(directory: str | Path | None = None) -> OverlayFinder:
    """Serve the overlay in ``directory`` for the modules it holds; return its finder.

    ``directory`` defaults to ``$ACCEL_TORCH_OVERLAY``, else ``./.accel-overlay/torch-<version>``.
    Checks, without importing torch, that the installed torch has the version and the
    stock files the overlay was made from. Idempotent for the same directory.

    Raises :class:`PatchError` if another overlay is active, a module of the overlay was
    already imported (activate before ``import torch``), or the overlay is incomplete;
    :class:`TorchVersionMismatchError` if the installed torch differs.
    """
    target = Path(directory) if directory is not None else _default_directory()
    target = target.resolve()
    current = active_finder()
    if current is not None:
        if current.directory == target:
            return current
        raise PatchError(f"another overlay is active ({current.directory}); call deactivate() first")
    manifest = read_manifest(target)
    if manifest["mode"] != "overlay":
        raise PatchError(f"{target} records an in-place install, not an overlay: nothing to activate")
    stock_root = installed_torch_root()
    installed = torch_version_at(stock_root)
    if installed != manifest["torch_version"]:
        raise TorchVersionMismatchError(installed, manifest["torch_version"], f"the overlay {target}")
    modules: dict[str, Path] = {}
    for rel, hashes in manifest["files"].items():
        stock = stock_root / rel
        file = target / rel
        if not file.is_file():
            raise PatchError(f"overlay {target} lacks {rel}; re-run 'accel patches apply'")
        if sha256_of_file(stock) != hashes["stock_sha256"]:
            raise PatchError(
                f"{stock} is not the file the overlay {target} was made from; re-run 'accel patches apply'"
            )
        if sha256_of_file(file) != hashes["patched_sha256"]:
            raise PatchError(
                f"{file} was changed after 'accel patches apply' wrote it (its SHA-256 differs from the one in "
                f"{target / 'manifest.json'}); not loading it. Re-run 'accel patches apply --target {target}'"
            )
        modules[module_name(rel)] = file
    imported = sorted(name for name in modules if name in sys.modules)
    if imported:
        raise PatchError(
            f"{', '.join(imported)} already imported with stock code; activate the overlay before 'import torch'"
        )
    finder = OverlayFinder(target, modules, stock_root)
    sys.meta_path.insert(0, finder)
    return finder


def deactivate() -> bool:
    """Remove the active overlay finder; return whether there was one. Imported modules stay."""
    finder = active_finder()
    if finder is None:
        return False
    sys.meta_path.remove(finder)
    return True
