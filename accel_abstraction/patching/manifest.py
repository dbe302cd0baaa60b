"""The manifest of an overlay or in-place state directory: what ``accel patches apply`` wrote.

``<target>/manifest.json`` records the torch version and root, the patches, and the SHA-256
of the stock and the patched text of every file. :func:`read_manifest` trusts nothing in it
that it has not checked (every path a ``torch/**.py`` module); :func:`foreign_files` finds
what apply did not write under a target, so that nothing else is ever replaced or removed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..safe_io import InputFileError, read_regular
from .errors import PatchError
from .series import Series, torch_version_at
from .staging import MANIFEST, sibling

__all__ = [
    "BACKUP",
    "FORMAT",
    "MANIFEST",
    "PATCHED",
    "foreign_files",
    "new_manifest",
    "owned_files",
    "read_manifest",
    "sha256",
    "sha256_of_file",
]

#: Folders of an in-place state directory: the stock originals, and the patched copies.
BACKUP = "backup"
PATCHED = "patched"

#: The manifest format this tool writes and reads.
FORMAT = 1


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


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
    if manifest.get("format") != FORMAT:
        return f"format {manifest.get('format')!r}, this tool reads {FORMAT}"
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


def owned_files(manifest: dict[str, Any]) -> dict[str, str]:
    """``{path under target: expected SHA-256}`` of every file 'accel patches apply' wrote there."""
    files: dict[str, str] = {}
    for rel, hashes in manifest["files"].items():
        if manifest["mode"] == "overlay":
            files[rel] = hashes["patched_sha256"]
        else:
            files[f"{BACKUP}/{rel}"] = hashes["stock_sha256"]
            files[f"{PATCHED}/{rel}"] = hashes["patched_sha256"]
    return files


def foreign_files(target: Path, manifest: dict[str, Any]) -> list[str]:
    """Files under ``target`` that apply did not write, or that changed since (by SHA-256)."""
    owned = owned_files(manifest)
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


def sha256_of_file(path: Path) -> str | None:
    """Hex SHA-256 of the file at ``path``, ``None`` if it cannot be read."""
    try:
        return sha256(path.read_bytes())
    except OSError:
        return None


def new_manifest(
    series: Series, torch_root: Path, mode: str, texts: dict[str, tuple[str, str]]
) -> dict[str, Any]:
    """The record of an apply: the series, torch, and the stock and patched SHA-256 of every file."""
    return {
        "format": FORMAT,
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
