"""Rebase a patch series onto another torch release: ``accel patches rebase --from 2.13.0``.

Run in an environment holding the new release (its installed files are what the new series
is made against). For every patch of the ``--from`` series, in order:

* a wheel patch is applied to the new release's files (with the series' earlier patches
  already applied; hunks may have moved, their lines must be found unchanged), and its diff
  is made again against those files: the same change with the new release's line numbers
  and context, under the same commit message;
* a C++ patch whose files the wheel ships (headers under ``torch/include/``) is checked and
  made again against those copies; one whose files the wheel lacks is copied unchanged
  (its context cannot be checked here, as ``accel patches check`` says).

When a hunk's lines are not found unchanged, GNU ``patch --fuzz=2`` is tried (context lines
at a hunk's edges may differ, removed lines may not): such a patch is rebased and listed as
*fuzzed*, to be read by a person. A patch that does not apply even so is copied unchanged
and reported: a person ports it (edit the copy, then ``accel patches check``). The new series is written
to ``<patches dir>/pytorch/<release>/`` through a temporary directory renamed into place;
an existing series there is replaced only with ``--replace``, which keeps that series' own
copy of a patch that does not rebase but whose copy applies (one ported by hand earlier). The diffs are made by
``git diff --no-index`` (so they read as ``git format-patch`` output); git must be on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .check import wheel_copy
from .errors import HunkMismatchError, PatchError
from .series import Patch, Series, base_version, torch_version_at
from .unidiff import apply_file_diff, parse_diff

__all__ = ["RebaseReport", "rebase_series"]


@dataclass
class RebaseReport:
    """What :func:`rebase_series` did: the new series' directory and each patch's outcome."""

    directory: Path
    rebased: list[str] = field(default_factory=list)  #: made again against the new release
    copied: list[str] = field(default_factory=list)  #: C++ patches whose files the wheel lacks
    fuzzed: list[str] = field(default_factory=list)  #: rebased with GNU patch's fuzz: read them
    kept: list[str] = field(default_factory=list)  #: ported by hand earlier: the replaced series' copy applies
    dropped: list[str] = field(default_factory=list)  #: the replaced series does not carry them (its comment says why)
    failed: dict[str, str] = field(default_factory=dict)  #: name -> why; copied unchanged for a person


def _git_diff(path: str, old: str, new: str) -> str:
    """``git diff`` of one file, as ``git format-patch`` writes it (``a/path``, ``b/path``)."""
    git = shutil.which("git")
    if git is None:
        raise PatchError("accel patches rebase needs git on PATH (it writes the diffs with git diff --no-index)")
    with tempfile.TemporaryDirectory() as tmp:
        for side, text in (("a", old), ("b", new)):
            file = Path(tmp, side, path)
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(text.encode("utf-8"))
        done = subprocess.run(
            [git, "-c", "core.quotepath=off", "-c", "diff.noprefix=false", "diff", "--no-index", "--no-color",
             "--no-ext-diff", "--no-prefix", "--", f"a/{path}", f"b/{path}"],
            cwd=tmp, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    if done.returncode not in (0, 1):
        raise PatchError(f"git diff failed for {path}: {done.stderr.strip()}")
    return done.stdout


def _header(patch: Patch) -> str:
    """The patch file up to its first diff: mail headers, commit message and diffstat."""
    text = patch.path.read_text(encoding="utf-8")
    cut = text.find("\ndiff --git ")
    return text if cut < 0 else text[: cut + 1]


def _rebase_one(patch: Patch, read: dict[str, str], torch_root: Path) -> str | None:
    """The patch made again against ``read`` (path -> current text, updated in place), or None
    for a C++ patch whose files the wheel does not ship. Raises HunkMismatchError."""
    diffs = []
    if patch.kind == "tests":
        return None  # PyTorch's test files: no wheel ships them, nothing to rebase against
    if patch.kind == "source":
        copies = {d.path: wheel_copy(d.path) for d in patch.diffs}
        if not all(c and (torch_root / c).is_file() for c in copies.values()):
            return None
        for diff in patch.diffs:
            stock = (torch_root / str(copies[diff.path])).read_text(encoding="utf-8")
            diffs.append(_git_diff(diff.path, stock, apply_file_diff(stock, diff, source=patch.name)))
        return _header(patch) + "".join(diffs)
    before = dict(read)
    for diff in patch.diffs:
        if diff.path not in before:
            before[diff.path] = (torch_root / diff.path).read_text(encoding="utf-8")
    staged = dict(before)
    for diff in patch.diffs:
        staged[diff.path] = apply_file_diff(staged[diff.path], diff, source=patch.name)
    read.update(staged)
    return _header(patch) + "".join(_git_diff(d.path, before[d.path], staged[d.path]) for d in patch.diffs)


def _fuzzy(patch: Patch, read: dict[str, str], torch_root: Path) -> str | None:
    """Like :func:`_rebase_one` for a wheel patch, applied by GNU ``patch --fuzz=2``; None if it fails too."""
    tool = shutil.which("patch")
    if tool is None:
        return None
    before = {d.path: read.get(d.path) or (torch_root / d.path).read_text(encoding="utf-8") for d in patch.diffs}
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in before.items():
            Path(tmp, path).parent.mkdir(parents=True, exist_ok=True)
            Path(tmp, path).write_bytes(text.encode("utf-8"))
        done = subprocess.run(
            [tool, "-p1", "--fuzz=2", "--batch", "--no-backup-if-mismatch", "--reject-file=-", "-d", tmp,
             "-i", str(patch.path)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            return None
        after = {path: Path(tmp, path).read_bytes().decode("utf-8") for path in before}
    read.update(after)
    return _header(patch) + "".join(_git_diff(path, before[path], after[path]) for path in before)


def _kept(path: Path, read: dict[str, str], torch_root: Path) -> str | None:
    """The replaced series' own copy of a patch (ported by hand earlier), when it applies here."""
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    try:
        made = _rebase_one(Patch(path.name, path, "", tuple(parse_diff(text, source=path.name))), read, torch_root)
    except (HunkMismatchError, PatchError):
        return None
    return None if made is None else text


def _not_carried(series_file: Path) -> dict[str, list[str]]:
    """``{"0007": [comment lines]}``: the patches a series file says it does not carry.

    Such a note is a block of ``#`` lines whose first line starts with ``# 00NN`` (the number)
    and whose last line ends with a full stop.
    """
    if not series_file.is_file():
        return {}
    notes: dict[str, list[str]] = {}
    block: list[str] | None = None
    for line in series_file.read_text(encoding="utf-8").splitlines():
        number = line[2:6]
        if line.startswith("# ") and number.isdigit() and len(number) == 4:
            block = notes[number] = [line]
        elif block is not None and line.startswith("#"):
            block.append(line)
        else:
            block = None
        if block is not None and line.rstrip().endswith("."):
            block = None
    return notes


def rebase_series(source: Series, torch_root: Path, patches_dir: Path, *, replace: bool = False) -> RebaseReport:
    """Write ``source`` rebased onto the torch under ``torch_root`` as that release's series."""
    version = base_version(torch_version_at(torch_root))
    if version == source.torch_version:
        raise PatchError(f"the series {source.directory} is already for torch {version}: nothing to rebase")
    root = patches_dir / "pytorch"
    final = root / version
    if final.exists() and not replace:
        raise PatchError(f"{final} exists; pass --replace to make it again from {source.directory}")
    report = RebaseReport(final)
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{version}.", dir=root))
    try:
        texts: dict[str, str] = {}
        dropped = _not_carried(final / "series") if replace else {}
        for patch in source.all_patches:
            if patch.name[:4] in dropped:
                report.dropped.append(patch.name)
                continue
            try:
                made = _rebase_one(patch, texts, torch_root)
            except HunkMismatchError as exc:
                made = _fuzzy(patch, texts, torch_root) if patch.kind == "wheel" else None
                if made is not None:
                    report.fuzzed.append(patch.name)
                elif (made := _kept(final / patch.name, texts, torch_root)) is not None:
                    report.kept.append(patch.name)
                else:
                    report.failed[patch.name] = str(exc)
            if made is None:
                shutil.copyfile(patch.path, work / patch.name)
                if patch.name not in report.failed:
                    report.copied.append(patch.name)
                continue
            (work / patch.name).write_text(made, encoding="utf-8")
            report.rebased.append(patch.name)
        lines = []
        for line in (source.directory / "series").read_text(encoding="utf-8").splitlines():
            name = line.strip()
            lines.extend(dropped[name[:4]] if name in report.dropped else [line.replace(source.torch_version, version)])
        (work / "series").write_text("\n".join(lines) + "\n", encoding="utf-8")
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{version}.old.", dir=root))
            os.replace(final, old / version)
            os.replace(work, final)
            shutil.rmtree(old)
        else:
            os.replace(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report
