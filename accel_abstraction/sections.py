"""Configuration sections declared without pydantic, and loaded without it when nothing is set.

A section is one ``[tool.accel...]`` table with its ``ACCEL_...`` variables: the core's
(``[tool.accel]``, ``ACCEL_*``) and any plugin's (``[tool.accel.neuron]``, ``ACCEL_NEURON_*``).
Its :class:`SectionSpec` states the table, the variable prefix, the default of every field
(the one place defaults are written: the pydantic model takes its field defaults from it)
and the pydantic model that validates it (:class:`~accel_abstraction.settings.ConfigSection`).

:meth:`SectionSpec.load` answers a run in which no keyword, no variable and no key of the
table sets a field with :class:`Defaults` (a few microseconds), and hands every other run to
the model's ``load`` (same precedence, errors and provenance). Importing pydantic and
pydantic-settings costs ~150 ms, about 12% of ``import torch``; before this, the first
``accel.device()`` paid it in every process.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .pyproject import DEFAULT, Provenance, check_keywords, find_pyproject, read_section_table

__all__ = ["CORE", "CoreSettings", "Defaults", "SectionSpec"]


@dataclass(frozen=True)
class SectionSpec:
    """One configuration section: table, variable prefix, field defaults, validating model."""

    section: str
    """Sub-table below ``[tool.accel]`` (``""``: the root table)."""
    env_prefix: str
    """Prefix of the section's environment variables (``ACCEL_``, ``ACCEL_NEURON_``)."""
    defaults: Mapping[str, Any]
    """Field name -> default; the model's fields are exactly these."""
    model: str
    """``module:Class`` of the pydantic model (a ``ConfigSection``) that validates set values."""

    @property
    def header(self) -> tuple[str, ...]:
        return ("tool", "accel", self.section) if self.section else ("tool", "accel")

    def is_set_anywhere(self, table: Mapping[str, Any], overrides: Mapping[str, Any]) -> bool:
        """Whether a keyword, a variable or a key of ``table`` sets one of the fields."""
        if overrides or any(not isinstance(value, Mapping) for value in table.values()):
            return True
        wanted = {f"{self.env_prefix}{name}".upper() for name in self.defaults}
        return any(key.upper() in wanted for key in os.environ)

    def load(self, pyproject: Path | None = None, **overrides: Any) -> Any:
        """The section's settings: :class:`Defaults` when nothing sets a field, else the validated model.

        A keyword that names no field is a :class:`ConfigError` with a did-you-mean.
        """
        check_keywords(overrides, self.defaults, self.header)
        overrides = {key: value for key, value in overrides.items() if value is not None}
        path = pyproject or find_pyproject()
        table = read_section_table(path, self.header, set(self.defaults)) if path is not None else {}
        if not self.is_set_anywhere(table, overrides):
            return Defaults(self)
        module, _, name = self.model.partition(":")
        model = getattr(importlib.import_module(module), name)
        return model.load(pyproject=path, **overrides)


class Defaults:
    """A section's settings with every field at its default, read like the model's instances."""

    def __init__(self, spec: SectionSpec) -> None:
        self.__dict__.update(spec.defaults)
        self._spec = spec

    def source_of(self, field: str) -> Provenance:
        """Always the default."""
        return DEFAULT

    def __repr__(self) -> str:
        values = " ".join(f"{name}={value!r}" for name, value in self._spec.defaults.items())
        return f"Defaults({self._spec.env_prefix}*: {values})"


#: The core's section: ``[tool.accel]`` / ``ACCEL_*``, validated by ``AccelSettings``.
CORE = SectionSpec(
    section="",
    env_prefix="ACCEL_",
    defaults={"backend": "auto", "device_index": None, "amp_dtype": "auto", "fallback": None},
    model="accel_abstraction.settings:AccelSettings",
)


class CoreSettings(Protocol):
    """What selection and backends read from the core settings (``AccelSettings`` or ``Defaults``)."""

    # read-only members, so that a model narrowing one (amp_dtype: Literal[...]) satisfies it
    @property
    def backend(self) -> str: ...
    @property
    def device_index(self) -> int | None: ...
    @property
    def amp_dtype(self) -> str: ...
    @property
    def fallback(self) -> str | None: ...

    def source_of(self, field: str) -> Provenance: ...
