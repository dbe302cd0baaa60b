"""Dry-run a patch series against a torch installation: what applies, what is applied, what fails.

:func:`check_series` (``accel patches check``) reports each patch without writing anything;
:func:`patched_texts` gives the stock and patched text of every file the series touches,
which :mod:`.apply` writes as an overlay or into torch. C++ ("source") patches are only
checked against the wheel's copies of their files (:func:`wheel_copy`): they take effect in
a PyTorch built from source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import HunkMismatchError, PatchError, TorchVersionMismatchError
from .series import Patch, Series, base_version, torch_version_at
from .unidiff import apply_file_diff

__all__ = ["NOT_BUILT_HERE", "PatchStatus", "check_series", "patched_texts", "read_torch_file", "wheel_copy"]


def _check_version(series: Series, torch_root: Path) -> str:
    installed = torch_version_at(torch_root)
    if base_version(installed) != series.torch_version:
        raise TorchVersionMismatchError(
            installed, series.torch_version, f"the patch series {series.directory}"
        )
    return installed


def read_torch_file(path: Path) -> str:
    """The UTF-8 text of a file of the torch installation; :class:`PatchError` if it cannot be read."""
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

#: Where a patch to PyTorch's test files goes instead of the installed torch.
TEST_TREE_NOTE = (
    "changes PyTorch's own test files, which no wheel ships: applied to a PyTorch test tree by "
    "`nox -s torch_tests` (accel_abstraction.patching.test_tree; docs/ci.md)"
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

    ``state`` is ``"applies"``, ``"applied"`` or ``"fails"`` for a wheel patch,
    ``"source"`` for a C++ patch (never applied here; ``"fails"`` when the wheel's copy of
    a file it changes does not match its context), and ``"tests"`` for a patch to PyTorch's
    test files (applied to a test tree, not to torch).
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
                    current = read_torch_file(torch_root / diff.path)
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
    results.extend(PatchStatus(patch, "tests", TEST_TREE_NOTE) for patch in series.test_patches)
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
            apply_file_diff(read_torch_file(torch_root / copy), diff, source=patch.name)
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
                current if current is not None else read_torch_file(torch_root / diff.path), diff, reverse=True
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
                stock[diff.path] = patched[diff.path] = read_torch_file(torch_root / diff.path)
            try:
                patched[diff.path] = apply_file_diff(patched[diff.path], diff, source=patch.name)
            except HunkMismatchError as exc:
                raise PatchError(
                    f"{exc} (under {torch_root}); run 'accel patches check' for details"
                ) from None
    return {path: (stock[path], patched[path]) for path in stock}
