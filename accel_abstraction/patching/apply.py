"""Check, apply and revert a patch series against a torch installation.

Two ways to apply:

* **overlay** (default): the patched copies of only the touched modules are written to a
  target directory (``<target>/torch/amp/grad_scaler.py``, ...). The installed torch is
  not modified; :mod:`.overlay` serves these files when torch imports them.
* **in place** (``in_place=True``): the installed files are overwritten, after the
  originals are copied to ``<target>/backup/``.

Either way ``<target>/manifest.json`` records what was done (torch version, patches,
SHA-256 of every stock and patched file), which :func:`revert` and overlay activation
rely on. A directory without that manifest is never deleted or overwritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import AlreadyAppliedError, HunkMismatchError, PatchError, TorchVersionMismatchError
from .series import Patch, Series, base_version, torch_version_at
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

MANIFEST = "manifest.json"
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
        raise PatchError(f"nothing at {target}: run 'accel patches apply' first, or pass its --target")
    if not target.is_dir():
        raise PatchError(f"--target {target} is a file, not a directory: pass the overlay / state directory")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PatchError(f"{target} holds no {MANIFEST}: not made by 'accel patches apply'") from None
    except (OSError, ValueError) as exc:
        raise PatchError(f"cannot read {path}: {exc}") from None
    problem = _manifest_problem(manifest)
    if problem:
        raise PatchError(
            f"{path} is not a manifest written by 'accel patches apply' ({problem}); it was edited or "
            f"made by something else: restore it, or remove {target} (after restoring the torch files "
            "by hand if they were patched in place)"
        )
    return manifest


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
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        return f"files {files!r} is not an object naming the patched files"
    for rel, hashes in files.items():
        if (
            not isinstance(hashes, dict)
            or not all(isinstance(hashes.get(k), str) for k in ("stock_sha256", "patched_sha256"))
        ):
            return f"the entry of {rel!r} lacks stock_sha256 / patched_sha256"
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts or not rel.endswith(".py"):
            return f"unsafe file path {rel!r}"
    return ""


def _prepare_target(target: Path) -> None:
    """Make ``target`` empty and ours: remove a previous overlay, refuse anything else."""
    if target.exists() and not target.is_dir():
        raise PatchError(f"--target {target} is a file, not a directory: choose a directory (it is created)")
    if target.exists():
        if (target / MANIFEST).is_file():
            manifest = read_manifest(target)
            if manifest["mode"] == "in-place":
                raise PatchError(
                    f"the patches are applied in place to {manifest['torch_root']} (state in {target}); "
                    "run 'accel patches revert' first"
                )
            shutil.rmtree(target)
        elif any(target.iterdir()):
            raise PatchError(
                f"{target} exists, is not empty and holds no {MANIFEST}; choose another --target"
            )
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PatchError(f"cannot create the --target directory {target}: {exc.strerror or exc}") from None


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


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".accel-tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(text.encode("utf-8"))
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise PatchError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_overlay(series: Series, torch_root: Path, target: Path) -> dict[str, Any]:
    """Write the patched copies of the touched modules under ``target``; return the manifest.

    ``target`` must be absent, empty, or a previous overlay (which is replaced).
    """
    try:
        texts = patched_texts(series, torch_root)
    except PatchError:
        _already_applied(series, torch_root, target)
        raise
    _prepare_target(target)
    for path, (_, new) in texts.items():
        _write(target / path, new)
    manifest = _manifest(series, torch_root, "overlay", texts)
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def apply_in_place(series: Series, torch_root: Path, target: Path) -> dict[str, Any]:
    """Patch the files under ``torch_root`` themselves, backing the originals up in ``target/backup``.

    Raises :class:`AlreadyAppliedError` (nothing written) when the series is already applied there.
    """
    try:
        texts = patched_texts(series, torch_root)
    except PatchError:
        _already_applied(series, torch_root, target)
        raise
    _prepare_target(target)
    for path, (old, _) in texts.items():
        _write(target / "backup" / path, old)
    manifest = _manifest(series, torch_root, "in-place", texts)
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    for path, (_, new) in texts.items():
        _write(torch_root / path, new)
    return manifest


def revert(target: Path) -> dict[str, Any]:
    """Undo :func:`write_overlay` (delete it) or :func:`apply_in_place` (restore the backup).

    In place, a file that changed since it was patched (e.g. torch reinstalled) is not
    overwritten: :class:`PatchError` lists such files and nothing is restored.
    """
    manifest = read_manifest(target)
    if manifest["mode"] == "in-place":
        root = Path(manifest["torch_root"])
        changed = []
        for path, hashes in manifest["files"].items():
            current = sha256(_read(root / path).encode())
            if current not in (hashes["patched_sha256"], hashes["stock_sha256"]):
                changed.append(path)
        if changed:
            raise PatchError(
                f"not reverting: {', '.join(changed)} under {root} changed since the patches were applied; "
                f"the originals are in {target / 'backup'}"
            )
        for path in manifest["files"]:
            _write(root / path, _read(target / "backup" / path))
    shutil.rmtree(target)
    if target.parent.name == ".accel-overlay" and not any(target.parent.iterdir()):
        target.parent.rmdir()  # the default parent, now empty
    return manifest
