"""Where ``import accel_abstraction as accel`` goes: where isort and ruff's ``I001`` would put it.

Imports fall into sections (``__future__``, standard library, third party, first party,
relative), separated by a blank line; within a section, ``import x`` lines come before
``from x import y`` lines (unless ``force-sort-within-sections``), each kind ordered by module
name, case-insensitively. ``accel_abstraction`` is third party unless the project's settings
name it first party. The project's settings are read from the nearest ``pyproject.toml``
(``[tool.ruff.lint.isort]``, ``[tool.ruff.isort]``, ``[tool.isort]``), ``ruff.toml`` or
``.ruff.toml`` (``[lint.isort]``, ``[isort]``) above the ported file: ``force-sort-within-sections``
and ``known-first-party``; a module is first party too where the project root (the folder of
that file) or its ``src/`` holds a package or module of its name, as ruff detects it.

A ``setup.cfg`` with an ``[isort]`` section (or ``[flake8] max-line-length``) counts as well,
after those files in the same folder.

So a file that was isort-clean before a port is isort-clean after it. The same settings
file gives the line length (``line-length`` of ``[tool.ruff]``, ``ruff.toml`` or ``[tool.black]``,
``line_length`` of ``[isort]``, ``max-line-length`` of ``[flake8]``): :mod:`.wrap` wraps the lines a
port made longer than it and :func:`long_lines` lists those it could not, for a note.
"""

from __future__ import annotations

import configparser
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ..pyproject import toml_parser

__all__ = ["ImportStyle", "long_lines", "place_accel_import", "style_for"]

ACCEL_MODULE = "accel_abstraction"
FUTURE, STDLIB, THIRD_PARTY, FIRST_PARTY, LOCAL = range(5)
_CONFIGS = (("pyproject.toml", ("tool", "ruff", "lint", "isort"), ("tool", "ruff", "isort"), ("tool", "isort")),
            ("ruff.toml", ("lint", "isort"), ("isort",)),
            (".ruff.toml", ("lint", "isort"), ("isort",)))  # fmt: skip


@dataclass(frozen=True)
class ImportStyle:
    """The isort settings that decide where one ``import`` line goes."""

    force_sort_within_sections: bool = False
    first_party: frozenset[str] = frozenset()
    root: Path | None = None  # the folder of the settings file: first-party modules are found there
    line_length: int | None = None  # ruff's line-length (or black's) where the project sets one

    def section(self, module: str, level: int = 0) -> int:
        top = module.partition(".")[0]
        if level:
            return LOCAL
        if top == "__future__":
            return FUTURE
        if top in self.first_party:
            return FIRST_PARTY
        if top in sys.stdlib_module_names:
            return STDLIB
        if self.root is not None and _in_project(self.root, top):
            return FIRST_PARTY
        return THIRD_PARTY

    def key(self, module: str, straight: bool) -> tuple[object, ...]:
        name = module.lower()
        return (name, not straight) if self.force_sort_within_sections else (not straight, name)


def _in_project(root: Path, top: str) -> bool:
    return any((base / top).is_dir() or (base / f"{top}.py").is_file() for base in (root, root / "src"))


def _table(data: dict[str, object], keys: tuple[str, ...]) -> dict[str, object] | None:
    for key in keys:
        nxt = data.get(key) if isinstance(data, dict) else None
        if not isinstance(nxt, dict):
            return None
        data = nxt
    return data


def _line_length(data: dict[str, object], name: str) -> int | None:
    tables = (("tool", "ruff"), ("tool", "black")) if name == "pyproject.toml" else ((),)
    for keys in tables:
        found = _table(data, keys) if keys else data
        value = found.get("line-length", found.get("line_length")) if found is not None else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def long_lines(source: str, output: str, limit: int | None) -> list[int]:
    """Lines of ``output`` the port made longer than the file allows, 1-based.

    The limit is the project's ``line-length`` where it sets one, else the file's own longest
    line or 88 (ruff's and black's default), whichever is more; lines the port did not write
    are never listed.
    """
    before = source.splitlines()
    allowed = limit or max([88, *map(len, before)])
    old = set(before)
    return [n for n, line in enumerate(output.splitlines(), start=1) if len(line) > allowed and line not in old]


@functools.lru_cache(maxsize=256)
def _style_in(folder: Path) -> ImportStyle:
    tomllib = toml_parser()
    for directory in (folder, *folder.parents):
        for name, *tables in _CONFIGS:
            config = directory / name
            if not config.is_file():
                continue
            try:
                data = tomllib.loads(config.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue  # a broken settings file: the defaults (ruff would refuse it anyway)
            length = _line_length(data, name)
            for keys in tables:
                found = _table(data, keys)
                if found is not None:
                    force = found.get("force-sort-within-sections", found.get("force_sort_within_sections", False))
                    first = found.get("known-first-party", found.get("known_first_party", ()))
                    names = frozenset(first) if isinstance(first, list) else frozenset()
                    return ImportStyle(bool(force), names, directory, length)
            if name != "pyproject.toml" or "tool" in data:
                return ImportStyle(root=directory, line_length=length)  # the project root, default import settings
        style = _setup_cfg_style(directory / "setup.cfg")
        if style is not None:
            return style
    return ImportStyle()


def _setup_cfg_style(config: Path) -> ImportStyle | None:
    """``[isort]`` (``force_sort_within_sections``, ``known_first_party``, ``line_length``) and
    ``[flake8] max-line-length`` of a ``setup.cfg``; ``None`` where it sets none of them."""
    if not config.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    isort = parser["isort"] if parser.has_section("isort") else None
    lengths = [parser.get(section, key, fallback="") for section, key in (("isort", "line_length"), ("flake8", "max-line-length"), ("flake8", "max_line_length"))]
    length = next((int(v) for v in lengths if v.strip().isdigit() and int(v) > 0), None)
    if isort is None and length is None:
        return None
    force = isort is not None and isort.get("force_sort_within_sections", "false").strip().lower() in ("true", "1", "yes")
    first = frozenset(n.strip() for n in (isort.get("known_first_party", "") if isort is not None else "").replace("\n", ",").split(",") if n.strip())
    return ImportStyle(force, first, config.parent, length)


def style_for(path: str) -> ImportStyle:
    """The import settings of the project holding ``path`` (defaults for a path that is no file)."""
    file = Path(path)
    if not file.is_file():
        return ImportStyle()
    return _style_in(file.resolve().parent)


def _module_of(line: cst.BaseStatement) -> tuple[str, int, bool] | None:
    """``(module, level, straight)`` of a one-import line, else ``None``."""
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    small = line.body[0]
    if isinstance(small, cst.Import):
        return get_full_name_for_node(small.names[0].name) or "", 0, True
    if isinstance(small, cst.ImportFrom):
        module = get_full_name_for_node(small.module) if small.module is not None else ""
        return module or "", len(small.relative), False
    return None


def _has_accel(module: cst.Module) -> bool:
    for line in module.body:
        if isinstance(line, cst.SimpleStatementLine):
            for small in line.body:
                if isinstance(small, cst.Import) and any(
                    get_full_name_for_node(a.name) == ACCEL_MODULE and a.asname is not None
                    and get_full_name_for_node(a.asname.name) == "accel" for a in small.names
                ):  # fmt: skip
                    return True
    return False


def place_accel_import(module: cst.Module, start: int, end: int, style: ImportStyle) -> cst.Module | None:
    """``module`` with ``import accel_abstraction as accel`` placed in its import block ``body[start:end]``.

    ``None`` when the block holds no import (the caller places it after the docstring) or
    ``accel`` is imported already (nothing to do: ``module`` itself is returned).
    """
    if _has_accel(module):
        return module
    body = list(module.body)
    block = [(i, _module_of(body[i])) for i in range(start, end)]
    imports = [(i, m) for i, m in block if m is not None]
    if not imports:
        return None
    ours_section = style.section(ACCEL_MODULE)
    ours = style.key(ACCEL_MODULE, True)
    new = cst.parse_statement(f"import {ACCEL_MODULE} as accel\n")
    assert isinstance(new, cst.SimpleStatementLine)
    same = [(i, m) for i, m in imports if style.section(m[0], m[1]) == ours_section]
    if same:
        after = [i for i, m in same if style.key(m[0], m[2]) > ours]
        if after:
            at = after[0]
            if at == same[0][0]:  # first of its section: the new line takes the blank line above it
                new = new.with_changes(leading_lines=body[at].leading_lines)  # type: ignore[union-attr]
                body[at] = body[at].with_changes(leading_lines=[])
            body.insert(at, new)
        else:
            body.insert(same[-1][0] + 1, new)
        return module.with_changes(body=body)
    before = [i for i, m in imports if style.section(m[0], m[1]) < ours_section]
    blank = [cst.EmptyLine()]
    if before:
        at = before[-1] + 1
        if at < len(body) and at < end and not body[at].leading_lines:  # type: ignore[union-attr]
            body[at] = body[at].with_changes(leading_lines=blank)
        body.insert(at, new.with_changes(leading_lines=blank))
    else:
        at = imports[0][0]
        new = new.with_changes(leading_lines=body[at].leading_lines)  # type: ignore[union-attr]
        body[at] = body[at].with_changes(leading_lines=blank)
        body.insert(at, new)
    return module.with_changes(body=body)
