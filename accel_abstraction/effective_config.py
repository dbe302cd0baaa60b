"""Every effective setting, with its value and where it came from (``accel config show``).

The sections are the core's (``[tool.accel]``, ``[tool.accel.distributed]``,
``[tool.accel.scan]``) and every plugin's (the ``accel_config_sections(register)`` hook). Each
field is loaded as the tool that reads it loads it, from the same sources in the same order
(keyword > ``ACCEL_*`` variable > the nearest ``pyproject.toml`` > default), and reported with
its :class:`~accel_abstraction.pyproject.Provenance`: ``keyword argument backend=``,
``environment variable ACCEL_BACKEND``, ``FILE:LINE [tool.accel] backend`` or ``default``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import PluginError
from .pyproject import find_pyproject
from .sections import CORE, DIST, SectionSpec

__all__ = ["EffectiveSetting", "config_sections", "effective_settings"]


@dataclass(frozen=True)
class EffectiveSetting:
    """One field of one section: its table key, variable, effective value and source."""

    table: str  # "tool.accel", "tool.accel.neuron"
    key: str
    variable: str  # ACCEL_BACKEND
    value: Any
    kind: str  # keyword | env | file | default
    source: str  # "environment variable ACCEL_BACKEND", "pyproject.toml:3 [tool.accel] backend", "default"

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "key": self.key,
            "variable": self.variable,
            "value": self.value,
            "kind": self.kind,
            "source": self.source,
        }


def _check(item: object) -> None:
    from .settings import ConfigSection

    if isinstance(item, SectionSpec) or (isinstance(item, type) and issubclass(item, ConfigSection)):
        return
    raise PluginError(
        f"register() takes an accel_abstraction.sections.SectionSpec or a ConfigSection subclass, got {item!r}"
    )


def config_sections() -> list[Any]:
    """The core's sections, then each plugin's (``accel_config_sections``), one per table."""
    from .plugins import get_host
    from .porting.settings import SCAN

    sections: list[Any] = [CORE, DIST, SCAN]
    seen = {_header(s) for s in sections}
    for _plugin, section in get_host("tools").collect("accel_config_sections", _check):
        if _header(section) not in seen:
            seen.add(_header(section))
            sections.append(section)
    return sections


def _header(section: Any) -> tuple[str, ...]:
    return section.header if isinstance(section, SectionSpec) else section.table_header()


def _fields_and_prefix(section: Any) -> tuple[list[str], str]:
    if isinstance(section, SectionSpec):
        return list(section.defaults), section.env_prefix
    return list(section.model_fields), section.env_prefix()


def _plain(value: Any) -> Any:
    """A value as JSON can hold it (a tuple as a list; anything else unusual as its text)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def effective_settings(pyproject: Path | None = None, **overrides: Mapping[str, Any]) -> list[EffectiveSetting]:
    """Every field of every section, as the tools reading it would see it now.

    ``pyproject``: the file to read (default: the nearest one above the working directory).
    ``overrides``: keyword values by table (``{"tool.accel": {"backend": "cpu"}}``), reported
    as ``keyword``. A bad value raises the section's own
    :class:`~accel_abstraction.errors.ConfigError`, naming its source.
    """
    path = pyproject or find_pyproject()
    rows = []
    for section in config_sections():
        table = ".".join(_header(section))
        fields, prefix = _fields_and_prefix(section)
        keywords = dict(overrides.get(table, {}))
        if isinstance(section, SectionSpec):
            loaded = section.load(pyproject=path, **keywords)
        else:
            loaded = section.load(path, search=False, **keywords)
        for name in fields:
            source = loaded.source_of(name)
            variable = f"{prefix}{name}".upper()
            rows.append(EffectiveSetting(table, name, variable, _plain(getattr(loaded, name)), source.kind, str(source)))
    return rows
