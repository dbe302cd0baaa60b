"""Find and read a patch series: ``patches/pytorch/<torch version>/series`` and its patches.

A series holds three kinds of patch. *Wheel* patches change Python files of the installed
torch (``torch/**.py``): the tooling checks, overlays and applies them. *Source* patches
change PyTorch's C++ (``c10/``, ``aten/``, ``torch/csrc/``): they only take effect in a
PyTorch built from source, so here they are listed, their context is checked against
the copies of those files that the wheel ships (its headers), and they are never applied.
*Tests* patches change PyTorch's own test files (``test/``), which no wheel ships: they are
applied to a PyTorch test tree (:mod:`.test_tree`, the ``torch_tests`` nox session).

Nothing here imports torch: the version and location of the installed torch are read
from its files, so the tooling can run (and an overlay can be activated) before torch
is imported.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from email.header import decode_header, make_header
from pathlib import Path

from ..environment import read
from ..errors import decode_utf8
from ..safe_io import InputFileError, read_regular
from .errors import PatchError, TorchVersionMismatchError
from .unidiff import FileDiff, parse_diff

__all__ = [
    "PATCHES_DIR_ENV",
    "Patch",
    "Series",
    "base_version",
    "default_patches_dir",
    "installed_torch_root",
    "load_series",
    "torch_version_at",
]

#: Environment variable naming the ``patches`` directory (the one holding ``pytorch/``).
PATCHES_DIR_ENV = "ACCEL_PATCHES_DIR"

_VERSION_RE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


@dataclass(frozen=True)
class Patch:
    """One patch file of a series."""

    name: str
    path: Path
    subject: str
    diffs: tuple[FileDiff, ...]
    kind: str = "wheel"  #: "wheel" (Python files of the installed torch), "source" (C++) or "tests" (``test/``)

    @property
    def files(self) -> tuple[str, ...]:
        """Paths it changes, relative to the directory that contains ``torch/``."""
        return tuple(d.path for d in self.diffs)


@dataclass(frozen=True)
class Series:
    """The ordered patches for one torch version."""

    torch_version: str
    directory: Path
    all_patches: tuple[Patch, ...]  #: every patch of the ``series`` file, in its order

    @property
    def patches(self) -> tuple[Patch, ...]:
        """The wheel patches, in order: what ``check``, ``apply`` and the overlay use."""
        return tuple(p for p in self.all_patches if p.kind == "wheel")

    @property
    def source_patches(self) -> tuple[Patch, ...]:
        """The C++ patches, in order: listed and context-checked, never applied here."""
        return tuple(p for p in self.all_patches if p.kind == "source")

    @property
    def test_patches(self) -> tuple[Patch, ...]:
        """The patches to PyTorch's test files, in order: applied to a test tree (:mod:`.test_tree`)."""
        return tuple(p for p in self.all_patches if p.kind == "tests")

    @property
    def files(self) -> tuple[str, ...]:
        """Every installed file the wheel patches change, in first-touched order, without repeats."""
        return tuple(dict.fromkeys(f for p in self.patches for f in p.files))


def _is_wheel_file(path: str) -> bool:
    return path.startswith("torch/") and not path.startswith("torch/csrc/") and path.endswith((".py", ".pyi"))


def _kind(name: str, diffs: list[FileDiff]) -> str:
    if all(d.path.startswith("test/") for d in diffs):
        return "tests"
    if any(d.path.startswith("test/") for d in diffs):
        raise PatchError(f"{name} changes PyTorch's test files and other files; split it into two patches")
    wheel = [_is_wheel_file(d.path) for d in diffs]
    if all(wheel):
        return "wheel"
    if not any(wheel):
        return "source"
    raise PatchError(f"{name} changes both installed Python files and C++ source; split it into two patches")


def base_version(version: str) -> str:
    """``"2.13.0+cpu"`` -> ``"2.13.0"``: drop the local build label."""
    return version.split("+", 1)[0]


def default_patches_dir() -> Path:
    """``$ACCEL_PATCHES_DIR``; else the series installed with the package; else this checkout's ``patches``.

    A wheel carries the top-level ``patches/`` directory as ``accel_abstraction/patching/series_data``
    (see ``[tool.setuptools.package-dir]``); an editable install or a source checkout reads
    ``patches/`` itself.
    """
    env = read(PATCHES_DIR_ENV)
    if env:
        return Path(env)
    installed = Path(__file__).resolve().parent / "series_data"
    if (installed / "pytorch").is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "patches"


def installed_torch_root() -> Path:
    """The directory holding the importable ``torch`` package (site-packages), without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise PatchError("torch is not installed in this environment (no importable 'torch' package)")
    return Path(next(iter(spec.submodule_search_locations))).parent


def torch_version_at(root: Path) -> str:
    """The ``__version__`` in ``root/torch/version.py`` (e.g. ``"2.13.0+cpu"``)."""
    version_file = root / "torch" / "version.py"
    try:
        match = _VERSION_RE.search(version_file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PatchError(f"cannot read the torch version from {version_file}: {exc.strerror}") from None
    if match is None:
        raise PatchError(f"no __version__ in {version_file}")
    return match.group(1)


def _subject(text: str, path: Path) -> str:
    """The ``Subject:`` header of a format-patch file, without ``[PATCH n/m]``, unfolded."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Subject:"):
            value = line[len("Subject:") :]
            for cont in lines[i + 1 :]:
                if not cont.startswith((" ", "\t")):
                    break
                value += cont
            value = str(make_header(decode_header(value)))
            return re.sub(r"^\s*\[PATCH[^\]]*\]\s*", "", value).strip()
        if not line:
            break
    return path.stem


def _read_text(path: Path) -> str:
    """The UTF-8 text of a series or patch file; :class:`PatchError` naming the file and line otherwise."""
    try:
        data = read_regular(path, "the patch series file", limit=64 << 20)
    except InputFileError as exc:
        raise PatchError(str(exc)) from None
    fix = "patch files must be UTF-8 text: re-export the patch (git format-patch writes UTF-8)"
    return decode_utf8(data, path, fix, PatchError)


def load_series(torch_version: str, patches_dir: Path | None = None) -> Series:
    """Read the series for ``torch_version`` (local label ignored) from ``patches_dir``.

    Raises :class:`TorchVersionMismatchError` when there is no series for that version but
    there are series for others, :class:`PatchError` for a missing or unreadable series.
    """
    root = (patches_dir or default_patches_dir()) / "pytorch"
    version = base_version(torch_version)
    directory = root / version
    series_file = directory / "series"
    if not series_file.is_file():
        available = (
            sorted(p.name for p in root.glob("*") if (p / "series").is_file()) if root.is_dir() else []
        )
        if available:
            raise TorchVersionMismatchError(
                torch_version, " or ".join(available), f"the patch series in {root}"
            )
        raise PatchError(
            f"no patch series at {series_file}; set {PATCHES_DIR_ENV} to the 'patches' directory"
        )
    names = []
    for number, line in enumerate(_read_text(series_file).splitlines(), start=1):
        name = line.strip()
        if not name or name.startswith("#"):
            continue
        if len(name) > 255 or "/" in name or "\\" in name or name in (".", "..") or "\x00" in name:
            shown = name if len(name) <= 60 else name[:40] + "..." + name[-12:]
            raise PatchError(
                f"{series_file}:{number}: {shown!r} is not a patch file name (one name a line, no folders, "
                "at most 255 characters); fix the series file"
            )
        names.append(name)
    if not names:
        raise PatchError(
            f"{series_file} lists no patches; add the patch file names to it, one a line, in the order they apply"
        )
    patches = []
    for name in names:
        path = directory / name
        if not path.is_file():
            raise PatchError(f"{series_file} lists {name}, which does not exist in {directory} (or is not a regular file)")
        text = _read_text(path)
        diffs = parse_diff(text, source=name)
        if not diffs:
            raise PatchError(f"{path} contains no diff")
        patches.append(Patch(name, path, _subject(text, path), tuple(diffs), _kind(name, diffs)))
    return Series(version, directory, tuple(patches))
