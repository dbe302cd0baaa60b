"""Create, replace and remove an overlay / state directory so that a killed run leaves
something the next run can finish or undo.

A directory is built whole under a hidden sibling name (``.NAME.accel-new``), its
``manifest.json`` written last, then renamed to ``NAME``. Replacing one renames the old
to ``.NAME.accel-old`` first; removing one renames it to ``.NAME.accel-trash`` and
deletes that. These three names are the journal: :func:`recover`, run first by every
``accel patches apply`` / ``revert`` on ``NAME``, reads them and

* deletes ``.accel-trash`` (its removal was decided);
* with ``.accel-old`` and no ``NAME``: renames a complete ``.accel-new`` (one that holds a
  manifest) into place, else puts ``.accel-old`` back, so a killed replace ends with one
  whole overlay, the new or the old;
* deletes ``.accel-old`` once ``NAME`` exists, and ``.accel-new`` when incomplete or when
  ``NAME`` exists; a complete ``.accel-new`` with no ``NAME`` is renamed into place.

Only directories with these exact names are touched; a symlink there is refused.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from ..safe_io import fsync_dir
from .errors import PatchError

__all__ = ["MANIFEST", "build", "recover", "remove", "sibling"]

MANIFEST = "manifest.json"


def sibling(target: Path, kind: str) -> Path:
    """``.NAME.accel-KIND`` next to ``target`` (``kind``: ``new``, ``old`` or ``trash``)."""
    return target.parent / f".{target.name}.accel-{kind}"


def _ours(path: Path) -> bool:
    """Whether a journal name is present; a symlink or a file there is refused, not followed."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise PatchError(
            f"{path} is not a directory written by 'accel patches'; move it away, then run again"
        )
    return path.is_dir()


def _delete(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except OSError as exc:
        raise PatchError(f"cannot remove {path}: {exc.strerror or exc}; remove it by hand") from None


def _rename(src: Path, dst: Path) -> None:
    try:
        os.replace(src, dst)
    except OSError as exc:
        raise PatchError(f"cannot rename {src} to {dst}: {exc.strerror or exc}") from None
    fsync_dir(dst.parent)


def recover(target: Path) -> list[str]:
    """Finish or undo what an interrupted run left next to ``target``; say what was done."""
    new, old, trash = (sibling(target, k) for k in ("new", "old", "trash"))
    done = []
    if _ours(trash):
        _delete(trash)
        done.append(f"removed {trash}, left by an interrupted removal")
    if _ours(old):
        if target.exists():
            _delete(old)
            done.append(f"removed {old}, the overlay an interrupted run had just replaced")
        elif _ours(new) and (new / MANIFEST).is_file():
            _rename(new, target)
            _delete(old)
            done.append(f"completed the interrupted replacement of {target}")
        else:
            _rename(old, target)
            done.append(f"restored {target}: the run replacing it was interrupted before the new one was whole")
    if _ours(new):
        if not target.exists() and (new / MANIFEST).is_file():
            _rename(new, target)
            done.append(f"completed {target}: an interrupted run had written it whole")
        else:
            _delete(new)
            done.append(f"removed {new}, a half-written directory of an interrupted run")
    return done


def build(target: Path, fill: Callable[[Path], None]) -> None:
    """Make ``target`` anew: ``fill(staging)`` writes everything (the manifest last), then the
    staging directory replaces ``target`` (an existing one is renamed aside, then deleted).

    On any failure (full disk, an error in ``fill``) the staging directory is deleted and
    ``target`` is as before.
    """
    new, old, trash = (sibling(target, k) for k in ("new", "old", "trash"))
    try:
        new.mkdir(parents=True)
    except OSError as exc:
        raise PatchError(f"cannot create {new}: {exc.strerror or exc}") from None
    try:
        fill(new)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    if target.exists():
        _rename(target, old)
        _rename(new, target)
        _rename(old, trash)
        _delete(trash)
    else:
        _rename(new, target)


def remove(target: Path) -> None:
    """Delete ``target`` whole: renamed to ``.NAME.accel-trash`` first, so a killed deletion
    never leaves a half-deleted ``target`` (the next :func:`recover` finishes it)."""
    trash = sibling(target, "trash")
    _rename(target, trash)
    _delete(trash)
    if target.parent.name == ".accel-overlay":
        try:
            target.parent.rmdir()  # the default parent, now empty
        except OSError:
            pass
