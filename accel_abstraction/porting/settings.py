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
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError
from ..sections import Setting, declare
from .rules import Rule

if TYPE_CHECKING:
    from ..settings import ConfigSection

    ScanSettings: type[ConfigSection]  # the module's __getattr__ builds it

__all__ = ["SCAN", "ScanConfig", "ScanSettings", "Selection", "build_selection", "load_settings"]

#: ``[tool.accel.scan]`` / ``ACCEL_SCAN_*`` (read by ``accel scan`` / ``accel port``, which always
#: validate with the model: no plain checks).
SCAN = declare(
    "scan",
    "ACCEL_SCAN_",
    {
        "select": Setting(list[str], [], "codes, prefixes or categories to report; empty: all"),
        "ignore": Setting(list[str], [], "codes, prefixes or categories never reported"),
        "exclude": Setting(list[str], [], "fnmatch patterns of paths to skip"),
    },
)


class ScanConfig(Protocol):
    """What the scanner reads from :data:`SCAN` (a test keeps these members the declared fields)."""

    @property
    def select(self) -> list[str]: ...
    @property
    def ignore(self) -> list[str]: ...
    @property
    def exclude(self) -> list[str]: ...


def __getattr__(name: str) -> Any:
    if name == "ScanSettings":  # the pydantic model, built on first access (imports pydantic)
        return SCAN.model_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_settings(pyproject: Path | None, **overrides: list[str]) -> ScanConfig:
    """Settings from ``pyproject`` (``None``: no file) with keyword overrides on top (the model's instance)."""
    settings: ScanConfig = SCAN.model_class.load(pyproject, search=False, **{k: v for k, v in overrides.items() if v})
    return settings


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


def build_selection(settings: ScanConfig, rules: tuple[Rule, ...], source: str) -> Selection:
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
