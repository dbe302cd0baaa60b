"""The nearest ``pyproject.toml`` and its ``[tool.accel...]`` tables, without pydantic.

Light on purpose: selecting a backend reads this on every first use, and most runs have
nothing to validate (see :mod:`accel_abstraction.sections`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError, decode_utf8, did_you_mean

__all__ = ["Provenance", "check_keywords", "file_provenance", "find_pyproject", "read_section_table", "toml_key_line"]


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (a folder or a file; default: the working directory)."""
    here = (start or Path.cwd()).resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def toml_key_line(path: Path, header: tuple[str, ...], key: str) -> int | None:
    """Line number (1-based) of ``key`` of table ``[a.b.c]`` in a TOML file, if found: under the
    table's header, as a dotted key (``accel.backend = ...`` under ``[tool]``) or in an inline
    table (``accel = { backend = ... }``); see :func:`.toml_lines.key_line`."""
    from .toml_lines import key_line

    try:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError:
        return None
    return key_line(text, (*header, key))


@dataclass(frozen=True)
class Provenance:
    """Where one setting's value came from, for messages and ``accel info``."""

    kind: Literal["keyword", "env", "file", "default"]
    detail: str

    def __str__(self) -> str:
        return self.detail


DEFAULT = Provenance("default", "default")


def file_provenance(path: Path, header: tuple[str, ...], key: str) -> Provenance:
    """``key`` of table ``header`` in ``path``, with its line: ``FILE:LINE [tool.accel] key``."""
    line = toml_key_line(path, header, key)
    return Provenance("file", f"{path}:{line or '?'} [{'.'.join(header)}] {key}")


def check_keywords(given: Iterable[str], known: Iterable[str], header: tuple[str, ...]) -> None:
    """:class:`ConfigError` with a did-you-mean if a keyword setting in ``given`` is not one of ``known``."""
    known = sorted(known)
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigError(
            f"unknown setting {', '.join(repr(k) for k in unknown)} (keyword argument) for "
            f"[{'.'.join(header)}]; known settings: {', '.join(known)}.{did_you_mean(unknown[0], known)}"
        )


def toml_parser() -> Any:
    """The TOML parser (``tomllib``; ``tomli`` on Python 3.10), imported on first use (~3 ms: not paid
    by runs without settings). The one place the project picks it: porting reads ruff/isort settings with it too."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the same parser, as the tomli distribution
        import tomli as tomllib
    return tomllib


def _read_bytes(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read()
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the configuration file ({exc.strerror or exc}); make it readable, "
            "or run from a folder without it"
        ) from None


def read_toml(path: Path, data: bytes | None = None) -> dict[str, Any]:
    """The parsed TOML file (``data``: its bytes, already read); a file that is unreadable, not
    UTF-8 or not TOML is one :class:`ConfigError`."""
    if data is None:
        data = _read_bytes(path)
    text = decode_utf8(data, path, "TOML files must be UTF-8: re-save the file as UTF-8", ConfigError)
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark (some Windows editors write one)
    tomllib = toml_parser()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc}); fix the file or remove its [tool.accel] table") from None
    except RecursionError:
        raise ConfigError(
            f"{path}: its TOML nests arrays or tables too deeply to read; flatten the value or remove it"
        ) from None


def read_section_table(path: Path, header: tuple[str, ...], known: set[str]) -> dict[str, Any]:
    """The table ``[a.b.c]`` (``header``) of ``path``, after checking the file parses and every key is known.

    Sub-tables (mapping values) are returned as they are: they belong to other sections.
    A file whose text never mentions ``accel`` cannot hold the table: it is not parsed (nor
    judged: a broken ``pyproject.toml`` that is not about accel is the build tools' business).
    """
    raw = _read_bytes(path)
    if b"accel" not in raw:
        return {}
    data = read_toml(path, raw)
    node: Any = data
    walked: list[str] = []
    for key in header:
        walked.append(key)
        if not isinstance(node, Mapping):
            break
        node = node.get(key, {})
        if not isinstance(node, Mapping):
            line = toml_key_line(path, tuple(walked[:-1]), key)
            where = f"{path}:{line}" if line else str(path)
            raise ConfigError(
                f"{where}: [{'.'.join(walked)}] must be a table, not {type(node).__name__} {node!r}; "
                f"write it as a [{'.'.join(walked)}] section with key = value lines"
            )
    table = dict(node)
    for key, value in table.items():
        if key not in known and not isinstance(value, Mapping):
            line = toml_key_line(path, header, key)
            raise ConfigError(
                f"{path}:{line or '?'}: unknown key {key!r} in [{'.'.join(header)}]; "
                f"known keys: {', '.join(sorted(known))}.{did_you_mean(key, known)}"
            )
    return table
