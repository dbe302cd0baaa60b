"""Check, apply and revert a patch series against a torch installation.

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
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..safe_io import InputFileError, WriteError, atomic_write, dir_lock, read_regular
from .errors import AlreadyAppliedError, HunkMismatchError, PatchError, TorchVersionMismatchError
from .series import Patch, Series, base_version, torch_version_at
from .staging import MANIFEST, build, recover, remove, sibling
from .unidiff import apply_file_diff

__all__ = [
    "MANIFEST",
    "AlreadyAppliedError",
    "PatchStatus",
    "apply_in_place",
    "check_series",
    "default_target",
    "patched_texts",
    "read_manifest",
    "revert",
    "sha256",
    "sha256_of_file",
    "write_overlay",
]

_FORMAT = 1


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def default_target(torch_version: str, cwd: Path | None = None) -> Path:
    """``<cwd>/.accel-overlay/torch-<version>``: where overlays and in-place state go by default."""
    return (cwd or Path.cwd()) / ".accel-overlay" / f"torch-{base_version(torch_version)}"


def _check_version(series: Series, torch_root: Path) -> str:
    installed = torch_version_at(torch_root)
    if base_version(installed) != series.torch_version:
        raise TorchVersionMismatchError(
            installed, series.torch_version, f"the patch series {series.directory}"
        )
    return installed


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise PatchError(f"cannot read {path}: {exc.strerror}") from None


#: Where a wheel keeps copies of PyTorch source files (its C++ headers), by source-tree prefix.
_WHEEL_COPIES = (
    ("c10/", "torch/include/c10/"),
    ("aten/src/ATen/", "torch/include/ATen/"),
    ("torch/csrc/", "torch/include/torch/csrc/"),
)

#: Why a source patch is listed but never applied.
NOT_BUILT_HERE = (
    "not built here: it changes C++ that is compiled into torch's libraries, so it takes effect "
    "only in a PyTorch built from source with it (patches/README.md)"
)


def wheel_copy(path: str) -> str | None:
    """The path of the wheel's copy of source file ``path`` (``c10/...`` -> ``torch/include/c10/...``)."""
    for prefix, copy in _WHEEL_COPIES:
        if path.startswith(prefix):
            return copy + path[len(prefix) :]
    return None


@dataclass(frozen=True)
class PatchStatus:
    """Result of checking one patch.

    ``state`` is ``"applies"``, ``"applied"`` or ``"fails"`` for a wheel patch, and
    ``"source"`` for a C++ patch (never applied here; ``"fails"`` when the wheel's copy of
    a file it changes does not match its context).
    """

    patch: Patch
    state: str
    detail: str = ""


def check_series(series: Series, torch_root: Path) -> list[PatchStatus]:
    """Dry-run every patch, in order, on the files under ``torch_root``; nothing is written.

    A patch that does not apply forward but applies in reverse is reported ``"applied"``
    (an in-place install). Raises :class:`TorchVersionMismatchError` on a version mismatch.
    """
    _check_version(series, torch_root)
    texts: dict[str, str] = {}
    results = []
    for patch in series.patches:
        staged = dict(texts)
        try:
            for diff in patch.diffs:
                current = staged.get(diff.path)
                if current is None:
                    current = _read(torch_root / diff.path)
                staged[diff.path] = apply_file_diff(current, diff, source=patch.name)
        except HunkMismatchError as exc:
            if _applies_in_reverse(patch, torch_root, texts):
                results.append(PatchStatus(patch, "applied", "already applied to these files"))
            else:
                results.append(PatchStatus(patch, "fails", str(exc)))
            continue
        texts = staged
        results.append(PatchStatus(patch, "applies"))
    results.extend(_check_source_patch(patch, torch_root) for patch in series.source_patches)
    order = {p.name: i for i, p in enumerate(series.all_patches)}
    return sorted(results, key=lambda r: order[r.patch.name])


def _check_source_patch(patch: Patch, torch_root: Path) -> PatchStatus:
    """Dry-run a C++ patch on the wheel's copies of its files, where the wheel has them."""
    checked, unchecked = [], []
    for diff in patch.diffs:
        copy = wheel_copy(diff.path)
        if copy is None or not (torch_root / copy).is_file():
            unchecked.append(diff.path)
            continue
        try:
            apply_file_diff(_read(torch_root / copy), diff, source=patch.name)
        except HunkMismatchError as exc:
            return PatchStatus(patch, "fails", f"{exc} (checked against the wheel's copy {copy})")
        checked.append(copy)
    notes = [NOT_BUILT_HERE]
    if checked:
        notes.append(f"context matches the installed {', '.join(checked)}")
    if unchecked:
        notes.append(f"context not checked: the wheel has no copy of {', '.join(unchecked)}")
    return PatchStatus(patch, "source", "; ".join(notes))


def _applies_in_reverse(patch: Patch, torch_root: Path, texts: dict[str, str]) -> bool:
    try:
        for diff in patch.diffs:
            current = texts.get(diff.path)
            apply_file_diff(
                current if current is not None else _read(torch_root / diff.path), diff, reverse=True
            )
    except HunkMismatchError:
        return False
    return True


def patched_texts(series: Series, torch_root: Path) -> dict[str, tuple[str, str]]:
    """``{relative path: (stock text, patched text)}`` for every file the series touches.

    Raises :class:`PatchError` naming the first patch and hunk that does not apply.
    """
    _check_version(series, torch_root)
    stock: dict[str, str] = {}
    patched: dict[str, str] = {}
    for patch in series.patches:
        for diff in patch.diffs:
            if diff.path not in stock:
                stock[diff.path] = patched[diff.path] = _read(torch_root / diff.path)
            try:
                patched[diff.path] = apply_file_diff(patched[diff.path], diff, source=patch.name)
            except HunkMismatchError as exc:
                raise PatchError(
                    f"{exc} (under {torch_root}); run 'accel patches check' for details"
                ) from None
    return {path: (stock[path], patched[path]) for path in stock}


def read_manifest(target: Path) -> dict[str, Any]:
    """The manifest of an overlay or in-place state directory; :class:`PatchError` if there is none,
    or if it is not one this tool wrote (every field it relies on is checked here, once)."""
    path = target / MANIFEST
    if not target.exists():
        left = [p.name for p in (sibling(target, k) for k in ("new", "old")) if p.exists()]
        if left:
            raise PatchError(
                f"nothing at {target}, but an interrupted 'accel patches' run left {', '.join(left)} next to it: "
                f"run 'accel patches apply' (or 'revert') with --target {target} to finish or undo it"
            )
        raise PatchError(f"nothing at {target}: run 'accel patches apply' first, or pass its --target")
    if not target.is_dir():
        raise PatchError(f"--target {target} is a file, not a directory: pass the overlay / state directory")
    if not path.exists() and not path.is_symlink():
        raise PatchError(f"{target} holds no {MANIFEST}: not made by 'accel patches apply'")
    try:
        manifest = json.loads(read_regular(path, "the patch manifest", limit=MANIFEST_LIMIT))
    except InputFileError as exc:
        raise PatchError(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise PatchError(f"cannot read {path}: not JSON ({str(exc)[:200]})") from None
    problem = _manifest_problem(manifest)
    if problem:
        raise PatchError(
            f"{path} is not a manifest written by 'accel patches apply' ({problem}); it was edited or "
            f"made by something else: restore it, or remove {target} (after restoring the torch files "
            "by hand if they were patched in place)"
        )
    return manifest


#: Largest manifest read (bytes): one names a few dozen files.
MANIFEST_LIMIT = 1 << 20


def _manifest_problem(manifest: Any) -> str:
    """What is wrong with a parsed manifest (``""``: nothing)."""
    if not isinstance(manifest, dict):
        return f"a JSON {type(manifest).__name__}, not an object"
    if manifest.get("format") != _FORMAT:
        return f"format {manifest.get('format')!r}, this tool reads {_FORMAT}"
    if manifest.get("mode") not in ("overlay", "in-place"):
        return f"mode {manifest.get('mode')!r}, expected 'overlay' or 'in-place'"
    for key in ("torch_version", "torch_root"):
        if not isinstance(manifest.get(key), str):
            return f"{key} {manifest.get(key)!r} is not a string"
    if not isinstance(manifest.get("patches", []), list):
        return "patches is not a list"
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        return f"files {str(files)[:100]!r} is not an object naming the patched files"
    for rel, hashes in files.items():
        if (
            not isinstance(hashes, dict)
            or not all(isinstance(hashes.get(k), str) for k in ("stock_sha256", "patched_sha256"))
        ):
            return f"the entry of {rel!r} lacks stock_sha256 / patched_sha256"
        parts = rel.split("/")
        if (
            not rel.startswith("torch/")
            or "\\" in rel
            or any(part in ("", ".", "..") for part in parts)
            or not rel.endswith(".py")
        ):
            return f"unsafe file path {rel!r}: every patched file is a torch/**.py module"
    return ""


def _owned(manifest: dict[str, Any]) -> dict[str, str]:
    """``{path under target: expected SHA-256}`` of every file 'accel patches apply' wrote there."""
    files: dict[str, str] = {}
    for rel, hashes in manifest["files"].items():
        if manifest["mode"] == "overlay":
            files[rel] = hashes["patched_sha256"]
        else:
            files[f"{_BACKUP}/{rel}"] = hashes["stock_sha256"]
            files[f"{_PATCHED}/{rel}"] = hashes["patched_sha256"]
    return files


def _foreign(target: Path, manifest: dict[str, Any]) -> list[str]:
    """Files under ``target`` that apply did not write, or that changed since (by SHA-256)."""
    owned = _owned(manifest)
    foreign = []
    for folder, _dirs, names in os.walk(target):
        for name in names:
            path = Path(folder, name)
            rel = path.relative_to(target).as_posix()
            if rel == MANIFEST:
                continue
            if path.is_symlink() or rel not in owned or sha256_of_file(path) != owned[rel]:
                foreign.append(rel)
    return sorted(foreign)


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
            foreign = _foreign(target, manifest)
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


def sha256_of_file(path: Path) -> str | None:
    """Hex SHA-256 of the file at ``path``, ``None`` if it cannot be read."""
    try:
        return sha256(path.read_bytes())
    except OSError:
        return None


def _manifest(
    series: Series, torch_root: Path, mode: str, texts: dict[str, tuple[str, str]]
) -> dict[str, Any]:
    return {
        "format": _FORMAT,
        "mode": mode,
        "torch_version": torch_version_at(torch_root),
        "series": series.torch_version,
        "patches": [p.name for p in series.patches],
        "torch_root": str(torch_root.resolve()),
        "files": {
            path: {"stock_sha256": sha256(old.encode()), "patched_sha256": sha256(new.encode())}
            for path, (old, new) in texts.items()
        },
    }


_BACKUP = "backup"
_PATCHED = "patched"


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PatchError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    try:
        atomic_write(path, text)
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
    manifest = _manifest(series, torch_root, mode, texts)

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
        **{f"{_BACKUP}/{rel}": old for rel, (old, _) in texts.items()},
        **{f"{_PATCHED}/{rel}": new for rel, (_, new) in texts.items()},
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
            if manifest["mode"] == "in-place" and (target / _PATCHED).is_dir():
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
    text = _read(path)
    if sha256(text.encode()) != expected:
        raise PatchError(f"{path} is not the file 'accel patches apply' saved (its SHA-256 differs); not using it")
    return text


def _patch_torch(manifest: dict[str, Any], root: Path, target: Path) -> int:
    """Write the patched copy over every torch file still stock; return how many were written.

    Checks every file first: one that is neither stock nor patched stops it before any write.
    """
    todo = []
    for rel, hashes in manifest["files"].items():
        current = sha256_of_file(root / rel)
        if current == hashes["stock_sha256"]:
            todo.append((rel, _state_text(target, f"{_PATCHED}/{rel}", hashes["patched_sha256"])))
        elif current != hashes["patched_sha256"]:
            raise PatchError(
                f"{root / rel} is neither the stock file nor the patched one recorded in {target}; "
                "it changed since (torch reinstalled?): run 'accel patches revert', then apply again"
            )
    for rel, text in todo:
        _write(root / rel, text)
    return len(todo)


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
                    f"the originals are in {target / _BACKUP}"
                )
            originals = {
                rel: _state_text(target, f"{_BACKUP}/{rel}", hashes["stock_sha256"])
                for rel, hashes in manifest["files"].items()
            }
            for rel, text in originals.items():
                if sha256_of_file(root / rel) != manifest["files"][rel]["stock_sha256"]:
                    _write(root / rel, text)
        foreign = _foreign(target, manifest)
        if not foreign:
            remove(target)
            return manifest
        for rel, expected in _owned(manifest).items():
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
