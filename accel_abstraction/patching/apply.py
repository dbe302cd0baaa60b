"""Apply and revert a patch series against a torch installation (the dry run is :mod:`.check`,
the record of what was written :mod:`.manifest`).

Two ways to apply:

* **overlay** (default): the patched copies of only the touched modules are written to a
  target directory (``<target>/torch/amp/grad_scaler.py``, ...). The installed torch is
  not modified; :mod:`.overlay` serves these files when torch imports them.
* **in place** (``in_place=True``): the installed files are overwritten, after the
  originals are copied to ``<target>/backup/``.

Either way ``<target>/manifest.json`` records what was done (torch version, patches,
SHA-256 of every stock and patched file), which :func:`revert` and overlay activation
rely on. A directory without that manifest is never deleted or overwritten, and one
with it loses only the files apply wrote. The manifest is data, not trusted for paths:
every file it names is a ``torch/**.py`` module, and in place only the torch package it
records (checked to be one) is written.

Every directory is written whole or not at all (:mod:`.staging`); an in-place apply
first saves the originals and the patched copies, then patches torch file by file, so a
killed run is completed by running apply again or undone by revert. Two runs on one
target take turns (a lock on its folder).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..safe_io import WriteError, atomic_write, dir_lock
from .check import check_series, patched_texts, read_torch_file
from .errors import AlreadyAppliedError, PatchError, TorchVersionMismatchError
from .manifest import (
    BACKUP,
    PATCHED,
    foreign_files,
    new_manifest,
    owned_files,
    read_manifest,
    sha256,
    sha256_of_file,
)
from .series import Series, base_version, torch_version_at
from .staging import MANIFEST, build, recover, remove

__all__ = [
    "MANIFEST",
    "AlreadyAppliedError",
    "apply_in_place",
    "default_target",
    "revert",
    "write_overlay",
]

def default_target(torch_version: str, cwd: Path | None = None) -> Path:
    """``<cwd>/.accel-overlay/torch-<version>``: where overlays and in-place state go by default."""
    return (cwd or Path.cwd()) / ".accel-overlay" / f"torch-{base_version(torch_version)}"


def _prepare_target(target: Path) -> None:
    """Check that ``target`` may be (re)made: absent, empty, or a previous overlay holding only
    what apply wrote; refuse anything else."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise PatchError(f"--target {target} is a file, not a directory: choose a directory (it is created)")
    if target.exists():
        if (target / MANIFEST).exists():
            manifest = read_manifest(target)
            if manifest["mode"] == "in-place":
                raise PatchError(
                    f"the patches are applied in place to {manifest['torch_root']} (state in {target}); "
                    "run 'accel patches revert' first"
                )
            foreign = foreign_files(target, manifest)
            if foreign:
                raise PatchError(
                    f"the overlay {target} holds files 'accel patches apply' did not write or that changed since "
                    f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}); not replacing it: move "
                    "them away or choose another --target"
                )
        elif any(target.iterdir()):
            raise PatchError(
                f"{target} exists, is not empty and holds no {MANIFEST}; choose another --target"
            )


def _already_applied(series: Series, torch_root: Path, target: Path) -> None:
    """Raise :class:`AlreadyAppliedError` when the series is already applied in place to ``torch_root``."""
    if (target / MANIFEST).is_file():
        manifest = read_manifest(target)
        if manifest["mode"] == "in-place":
            root = Path(manifest["torch_root"])
            current = {rel: sha256_of_file(root / rel) for rel in manifest["files"]}
            if root.resolve() == torch_root.resolve() and all(
                current[rel] == hashes["patched_sha256"] for rel, hashes in manifest["files"].items()
            ):
                raise AlreadyAppliedError(
                    f"the {len(manifest['patches'])} patches are already applied in place to {root} "
                    f"(state in {target}); nothing to do. Undo with: accel patches revert --target {target}"
                )
    states = {r.state for r in check_series(series, torch_root) if r.patch.kind == "wheel"}
    if states == {"applied"}:
        raise AlreadyAppliedError(
            f"the patches are already applied to the torch files under {torch_root}, but not recorded in "
            f"{target}; nothing to do (if another --target holds the state, revert with that one)"
        )


def _write(path: Path, text: str, expect: bytes | None = None) -> None:
    """Write ``path`` whole; ``expect``: the bytes checked before, which it must still hold
    right before the rename (a torch file changed meanwhile is not overwritten)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PatchError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    try:
        atomic_write(path, text, expect=expect)
    except WriteError as exc:
        raise PatchError(str(exc)) from None


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    _write(folder / MANIFEST, json.dumps(manifest, indent=2) + "\n")


Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@contextlib.contextmanager
def _transaction(target: Path, say: Say, create: bool = True) -> Iterator[None]:
    """Hold the lock on ``target``'s folder and finish or undo what an interrupted run left
    (``create``: make the folder first; else a missing one means there is nothing there)."""
    if not create and not target.parent.is_dir():
        read_manifest(target)  # raises: nothing at target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PatchError(f"cannot create the --target directory {target.parent}: {exc.strerror or exc}") from None
    with dir_lock(target.parent, "accel patches"):
        for line in recover(target):
            say(line)
        yield


def _make_state(series: Series, torch_root: Path, target: Path, mode: str) -> dict[str, Any]:
    """Write ``target`` whole for ``mode`` (the files of :func:`_layout`, then the manifest);
    return the manifest. Raises :class:`AlreadyAppliedError` when torch already has the series."""
    try:
        texts = patched_texts(series, torch_root)
    except PatchError:
        _already_applied(series, torch_root, target)
        raise
    _prepare_target(target)
    manifest = new_manifest(series, torch_root, mode, texts)

    def fill(folder: Path) -> None:
        for path, text in _layout(mode, texts).items():
            _write(folder / path, text)
        _write_manifest(folder, manifest)

    build(target, fill)
    return manifest


def _layout(mode: str, texts: dict[str, tuple[str, str]]) -> dict[str, str]:
    """``{path under the target: text}`` apply writes (:func:`_owned` reads the same layout back)."""
    if mode == "overlay":
        return {rel: new for rel, (_, new) in texts.items()}
    return {
        **{f"{BACKUP}/{rel}": old for rel, (old, _) in texts.items()},
        **{f"{PATCHED}/{rel}": new for rel, (_, new) in texts.items()},
    }


def write_overlay(series: Series, torch_root: Path, target: Path, say: Say = _quiet) -> dict[str, Any]:
    """Write the patched copies of the touched modules under ``target``; return the manifest.

    ``target`` must be absent, empty, or a previous overlay (which is replaced whole: a
    killed run leaves the old overlay or the new one, see :mod:`.staging`). ``say``
    receives a line for each thing an interrupted earlier run left and this one cleaned up.
    """
    with _transaction(target, say):
        return _make_state(series, torch_root, target, "overlay")


def apply_in_place(series: Series, torch_root: Path, target: Path, say: Say = _quiet) -> dict[str, Any]:
    """Patch the files under ``torch_root`` themselves, backing the originals up in ``target/backup``.

    The state directory (originals, patched copies, manifest) is written whole before the
    first torch file changes, so a run killed while patching is completed by running apply
    again, or undone by ``revert``. Raises :class:`AlreadyAppliedError` (nothing written)
    when the series is already applied there.
    """
    with _transaction(target, say):
        if (target / MANIFEST).exists():
            manifest = read_manifest(target)
            if manifest["mode"] == "in-place" and (target / PATCHED).is_dir():
                root = _checked_root(manifest, torch_root)
                if _patch_torch(manifest, root, target) > 0:
                    say(f"completed the interrupted in-place apply recorded in {target}")
                    return manifest
        manifest = _make_state(series, torch_root, target, "in-place")
        _patch_torch(manifest, _checked_root(manifest, torch_root), target)
        return manifest


def _checked_root(manifest: dict[str, Any], torch_root: Path | None) -> Path:
    """The torch root a manifest names, after checking it is a torch tree of the recorded version
    (and the one asked for): a manifest is data, never trusted to name where to write."""
    root = Path(manifest["torch_root"])
    if torch_root is not None and root.resolve() != torch_root.resolve():
        raise PatchError(
            f"the state records torch under {root}, not {torch_root}: pass --torch-root {root} "
            "if that is the torch to restore"
        )
    if not (root / "torch" / "version.py").is_file():
        raise PatchError(f"the state names {root} as torch's folder, but there is no torch package there; not writing")
    installed = torch_version_at(root)
    if installed != manifest["torch_version"]:
        raise TorchVersionMismatchError(installed, manifest["torch_version"], "the recorded in-place state")
    package = (root / "torch").resolve()
    for rel in manifest["files"]:
        path = root / rel
        if not path.resolve().is_relative_to(package) or not path.is_file() or path.is_symlink():
            raise PatchError(f"the state names {rel}, which is not a file of the torch package under {root}; not writing")
    return root


def _state_text(target: Path, rel: str, expected: str) -> str:
    """A file of the state directory, checked against its recorded SHA-256."""
    path = target / rel
    text = read_torch_file(path)
    if sha256(text.encode()) != expected:
        raise PatchError(f"{path} is not the file 'accel patches apply' saved (its SHA-256 differs); not using it")
    return text


def _patch_torch(manifest: dict[str, Any], root: Path, target: Path) -> int:
    """Write the patched copy over every torch file still stock; return how many were written.

    Checks every file first: one that is neither stock nor patched stops it before any write.
    """
    todo = []
    for rel, hashes in manifest["files"].items():
        data = _bytes_of(root / rel)
        current = None if data is None else sha256(data)
        if current == hashes["stock_sha256"]:
            todo.append((rel, _state_text(target, f"{PATCHED}/{rel}", hashes["patched_sha256"]), data))
        elif current != hashes["patched_sha256"]:
            raise PatchError(
                f"{root / rel} is neither the stock file nor the patched one recorded in {target}; "
                "it changed since (torch reinstalled?): run 'accel patches revert', then apply again"
            )
    for rel, text, data in todo:
        _write(root / rel, text, expect=data)
    return len(todo)


def _bytes_of(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def revert(target: Path, torch_root: Path | None = None, say: Say = _quiet) -> dict[str, Any]:
    """Undo :func:`write_overlay` (delete it) or :func:`apply_in_place` (restore the backup).

    Writes only inside the torch package the state records, and only when that is
    ``torch_root`` (if given); each restored original is checked against its recorded
    SHA-256. In place, a file that changed since it was patched (e.g. torch reinstalled)
    is not overwritten: :class:`PatchError` lists such files and nothing is restored.
    Removes only the files apply wrote (by recorded SHA-256); anything else in ``target``
    stays, and ``target`` with it.
    """
    with _transaction(target, say, create=False):
        manifest = read_manifest(target)
        if manifest["mode"] == "in-place":
            root = _checked_root(manifest, torch_root)
            changed = []
            for path, hashes in manifest["files"].items():
                if sha256_of_file(root / path) not in (hashes["patched_sha256"], hashes["stock_sha256"]):
                    changed.append(path)
            if changed:
                raise PatchError(
                    f"not reverting: {', '.join(changed)} under {root} changed since the patches were applied; "
                    f"the originals are in {target / BACKUP}"
                )
            originals = {
                rel: _state_text(target, f"{BACKUP}/{rel}", hashes["stock_sha256"])
                for rel, hashes in manifest["files"].items()
            }
            for rel, text in originals.items():
                data = _bytes_of(root / rel)
                if data is None or sha256(data) != manifest["files"][rel]["stock_sha256"]:
                    _write(root / rel, text, expect=data)
        foreign = foreign_files(target, manifest)
        if not foreign:
            remove(target)
            return manifest
        for rel, expected in owned_files(manifest).items():
            if sha256_of_file(target / rel) == expected and not (target / rel).is_symlink():
                (target / rel).unlink()
        (target / MANIFEST).unlink()
        for folder, _dirs, _names in sorted(os.walk(target), key=lambda t: -len(t[0])):
            if folder != str(target) and not os.listdir(folder):
                os.rmdir(folder)
        say(
            f"kept {target}: it holds files 'accel patches apply' did not write "
            f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''})"
        )
        return manifest
