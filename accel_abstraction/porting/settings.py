"""Rule selection for ``accel scan`` / ``accel port`` from ``[tool.accel.scan]``.

::

    [tool.accel.scan]
    select = ["ACC1", "manual"]      # codes, code prefixes or categories; default: all
    ignore = ["ACC104"]
    exclude = ["tests/fixtures/*"]   # fnmatch patterns on paths, relative to the pyproject

Read by pydantic-settings' own ``PyprojectTomlConfigSettingsSource`` (table header
``("tool", "accel", "scan")``); keyword arguments (the CLI's ``--select``/``--ignore``)
win over the file.  Unknown keys are errors that name the file.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    PyprojectTomlConfigSettingsSource,
    SettingsConfigDict,
)

from ..errors import ConfigError
from ..pyproject import read_toml, toml_key_line
from .rules import Rule

_TABLE = ("tool", "accel", "scan")
_NO_FILE = Path("/nonexistent/accel-scan/pyproject.toml")
_PYPROJECT: contextvars.ContextVar[Path | None] = contextvars.ContextVar("accel_scan_pyproject", default=None)


class ScanSettings(BaseSettings):
    """``[tool.accel.scan]``."""

    model_config = SettingsConfigDict(
        pyproject_toml_table_header=_TABLE,
        extra="forbid",
    )

    select: list[str] = Field(default_factory=list, description="codes, prefixes or categories to report; empty: all")
    ignore: list[str] = Field(default_factory=list, description="codes, prefixes or categories never reported")
    exclude: list[str] = Field(default_factory=list, description="fnmatch patterns of paths to skip")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Without a pyproject the source is pointed at a path that cannot exist, so it reads nothing.
        path = _PYPROJECT.get() or _NO_FILE
        return (init_settings, PyprojectTomlConfigSettingsSource(settings_cls, toml_file=path))


def load_settings(pyproject: Path | None, **overrides: list[str]) -> ScanSettings:
    """Settings from ``pyproject`` (may be ``None``) with keyword overrides on top."""
    if pyproject is not None:
        read_toml(pyproject)  # unreadable, not UTF-8, not TOML: one ConfigError, as for the core's settings
    token = _PYPROJECT.set(pyproject)
    try:
        return ScanSettings(**{k: v for k, v in overrides.items() if v})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        line = toml_key_line(pyproject, _TABLE, str(first["loc"][0])) if pyproject and first["loc"] else None
        location = f"{pyproject}:{line}" if line else str(pyproject)
        source = f"[tool.accel.scan] in {location}" if pyproject else "the command line"
        raise ConfigError(
            f"{source}: {where}: {first['msg']}; accepted keys: select, ignore, exclude (lists of strings)"
        ) from None
    except ValueError as exc:  # tomllib.TOMLDecodeError, raised by the pyproject source
        raise ConfigError(f"{pyproject}: invalid TOML ({exc}); fix the file") from None
    finally:
        _PYPROJECT.reset(token)


@dataclass(frozen=True)
class Selection:
    """Which rule codes are reported (picklable, so worker processes can use it)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    categories: tuple[tuple[str, str], ...] = ()  # (code, category) of every known rule

    def _hits(self, selectors: tuple[str, ...], code: str) -> bool:
        category = dict(self.categories).get(code)
        return any(code.startswith(s) or s == category for s in selectors)

    def __call__(self, code: str) -> bool:
        if self.select and not self._hits(self.select, code):
            return False
        return not self._hits(self.ignore, code)


def build_selection(settings: ScanSettings, rules: tuple[Rule, ...], source: str) -> Selection:
    """Validate the selectors against the known rules and return a :class:`Selection`."""
    codes = {r.code for r in rules}
    categories = {r.category for r in rules}
    for selector in (*settings.select, *settings.ignore):
        if selector not in categories and not any(c.startswith(selector) for c in codes):
            known = ", ".join(sorted(categories))
            raise ConfigError(
                f"{source}: rule selector {selector!r} matches no rule code or category; "
                f"use a code such as ACC101, a prefix such as ACC1, or a category ({known})"
            )
    return Selection(
        tuple(settings.select), tuple(settings.ignore), tuple((r.code, r.category) for r in rules)
    )
