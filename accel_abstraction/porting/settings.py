"""Rule selection for ``accel scan`` / ``accel port`` from ``[tool.accel.scan]``.

::

    [tool.accel.scan]
    select = ["ACC1", "manual"]      # codes, code prefixes or categories; default: all
    ignore = ["ACC104"]
    exclude = ["tests/fixtures/*"]   # fnmatch patterns on paths, relative to the pyproject

Loaded like every configuration section (:class:`~accel_abstraction.settings.ConfigSection`):
keyword arguments (the CLI's ``--select``/``--ignore``) win over ``ACCEL_SCAN_*`` variables
(JSON lists: ``ACCEL_SCAN_IGNORE='["ACC104"]'``), which win over the table; unknown keys and
invalid values are errors that name the file and line or the variable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from ..errors import ConfigError
from ..settings import ConfigSection, section_config
from .rules import Rule


class ScanSettings(ConfigSection):
    """``[tool.accel.scan]`` / ``ACCEL_SCAN_*``."""

    model_config = section_config("ACCEL_SCAN_")
    section: ClassVar[str] = "scan"

    select: list[str] = Field(default_factory=list, description="codes, prefixes or categories to report; empty: all")
    ignore: list[str] = Field(default_factory=list, description="codes, prefixes or categories never reported")
    exclude: list[str] = Field(default_factory=list, description="fnmatch patterns of paths to skip")


def load_settings(pyproject: Path | None, **overrides: list[str]) -> ScanSettings:
    """Settings from ``pyproject`` (``None``: no file) with keyword overrides on top."""
    return ScanSettings.load(pyproject, search=False, **{k: v for k, v in overrides.items() if v})


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
