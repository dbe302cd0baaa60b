"""Apply a series' patches to PyTorch's own test files (``test/...``) in a PyTorch test tree.

No wheel ships PyTorch's tests, so these patches (kind ``"tests"``, :mod:`.series`) go to a
tree of them, such as the one ``plugins/neuron/tests/scripts/torch_tests_tree.py`` builds;
the ``torch_tests`` nox session calls :func:`apply_to_tree` before running it. Each file is
written whole or not at all (:func:`~accel_abstraction.safe_io.atomic_write`); a patch already
applied (its reverse applies) is left as it is, so applying twice is harmless.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from ..safe_io import atomic_write
from .errors import HunkMismatchError, PatchError
from .series import Series
from .unidiff import apply_file_diff

__all__ = ["TreeResult", "apply_to_tree"]


@dataclass(frozen=True)
class TreeResult:
    """What :func:`apply_to_tree` did with one patch: ``"applied"`` now, ``"was applied"`` before, or
    ``"not needed"`` (it changes none of the files asked for)."""

    patch: str
    state: str


def apply_to_tree(series: Series, tree: Path, files: Collection[str] | None = None) -> list[TreeResult]:
    """Apply every test-file patch of ``series`` to the files under ``tree``, in order.

    ``files`` (paths like ``test/nn/test_convolution.py``): only the patches that change one of
    them; the others are reported ``"not needed"``. Default: every patch.

    Raises :class:`PatchError` naming the patch and file when a file is missing or a hunk
    matches neither forward nor in reverse (the tree is of another PyTorch release).
    """
    results = []
    for patch in series.test_patches:
        if files is not None and not set(patch.files) & set(files):
            results.append(TreeResult(patch.name, "not needed"))
            continue
        texts: dict[Path, str] = {}
        state = "applied"
        for diff in patch.diffs:
            path = tree / diff.path
            if not path.is_file():
                raise PatchError(
                    f"{patch.name}: {diff.path} is not in the test tree {tree}; build the tree of torch "
                    f"{series.torch_version}'s tests (docs/ci.md, 'PyTorch's own test files')"
                )
            text = texts.get(path, path.read_text(encoding="utf-8"))
            try:
                texts[path] = apply_file_diff(text, diff, source=patch.name)
            except HunkMismatchError as forward:
                try:
                    apply_file_diff(text, diff, reverse=True, source=patch.name)
                except HunkMismatchError:
                    raise PatchError(f"{forward} (test tree {tree})") from None
                state = "was applied"
                texts.pop(path, None)
        if state == "applied":
            for path, text in texts.items():
                atomic_write(path, text, what=f"{patch.name} applied to {path.name}")
        results.append(TreeResult(patch.name, state))
    return results
