"""Configuration sections declared without pydantic, and loaded without it when nothing is set.

A section is one ``[tool.accel...]`` table with its ``ACCEL_...`` variables: the core's
(``[tool.accel]``, ``ACCEL_*``) and any plugin's (``[tool.accel.neuron]``, ``ACCEL_NEURON_*``).
Its :class:`SectionSpec` states the table, the variable prefix and the default of every field
(the one place defaults are written). Its fields are declared either as :class:`Setting`
rows (type, default, meaning, limits), from which the validating pydantic model is built
when a value needs it (:func:`~accel_abstraction.settings.declared_model`): the whole section
in one declaration; or, for a section whose values need validators of their own, by naming
a :class:`~accel_abstraction.settings.ConfigSection` subclass that takes its defaults from here.

:meth:`SectionSpec.load` answers a run in which no keyword, no variable and no key of the
table sets a field with :class:`Defaults` (a few microseconds); so too a run whose set values
are all plain (``ACCEL_BACKEND=cpu``, ``backend = "cpu"``: each field's plain check accepts
it), with each value's source. Every other run goes to the model's ``load`` (same precedence,
and every error message is the model's). Importing pydantic and pydantic-settings costs
~150 ms, about 12% of ``import torch``; before this, the first ``accel.device()`` paid it
in every process, and before the plain checks every configured one did.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .pyproject import (
    DEFAULT,
    Provenance,
    check_keywords,
    file_provenance,
    find_pyproject,
    read_section_table,
)

__all__ = ["CORE", "DIST", "CoreSettings", "DistConfig", "Defaults", "NotPlain", "PlainCheck", "SectionSpec", "Setting", "declare"]


class NotPlain(Exception):
    """Raised by a plain check: the value needs the pydantic model (to validate it, or to word its error)."""


#: A field's plain check: the value as given (keyword) or read (an environment string, a TOML
#: value) -> the value the model would produce; :class:`NotPlain` for anything else.
PlainCheck = Callable[[Any], Any]


@dataclass(frozen=True)
class Setting:
    """One field of a declared section: its type, default, meaning (the model field's description) and limits."""

    type: Any
    """The field's type, as a runtime annotation (``bool``, ``int``, ``str | None``)."""
    default: Any
    description: str
    limits: Mapping[str, Any] = field(default_factory=dict)
    """pydantic ``Field`` constraints: ``ge``, ``le``, ``gt``, ``allow_inf_nan``."""


def declare(
    section: str, env_prefix: str, settings: Mapping[str, Setting], plain: Mapping[str, PlainCheck] | None = None
) -> SectionSpec:
    """A section declared in one place: its fields' types, defaults, meanings and limits.

    The validating model is built from ``settings`` when a set value needs it; nothing here
    imports pydantic.
    """
    defaults = {name: setting.default for name, setting in settings.items()}
    return SectionSpec(section, env_prefix, defaults, plain=plain or {}, settings=settings)


@dataclass(frozen=True)
class SectionSpec:
    """One configuration section: table, variable prefix, field defaults, validating model."""

    section: str
    """Sub-table below ``[tool.accel]`` (``""``: the root table)."""
    env_prefix: str
    """Prefix of the section's environment variables (``ACCEL_``, ``ACCEL_NEURON_``)."""
    defaults: Mapping[str, Any]
    """Field name -> default; the model's fields are exactly these."""
    model: str = ""
    """``module:Class`` of the pydantic model (a ``ConfigSection``) that validates set values;
    ``""``: the model is built from :attr:`settings`."""
    plain: Mapping[str, PlainCheck] = field(default_factory=dict)
    """Field name -> its plain check: a set value that every check accepts is loaded without
    the model. A check must give what the model gives for every value it accepts (a test
    compares them); values it does not accept, and fields without a check, go to the model,
    so every error message is the model's."""
    settings: Mapping[str, Setting] = field(default_factory=dict)
    """Field name -> its declaration, for a section without a model class of its own (:func:`declare`)."""

    @functools.cached_property
    def model_class(self) -> Any:
        """The pydantic model validating the section (imports pydantic; built once for declared sections)."""
        if self.model:
            module, _, name = self.model.partition(":")
            return getattr(importlib.import_module(module), name)
        from .settings import declared_model

        return declared_model(self)

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
        """The section's settings: :class:`Defaults` when nothing sets a field or every set value
        passes its plain check, else the validated model.

        A keyword that names no field is a :class:`ConfigError` with a did-you-mean.
        """
        check_keywords(overrides, self.defaults, self.header)
        overrides = {key: value for key, value in overrides.items() if value is not None}
        path = pyproject or find_pyproject()
        table = read_section_table(path, self.header, set(self.defaults)) if path is not None else {}
        if not self.is_set_anywhere(table, overrides):
            return Defaults(self)
        plain = self._load_plain(table, overrides, path)
        if plain is not None:
            return plain
        return self.model_class.load(pyproject=path, **overrides)

    def _load_plain(self, table: Mapping[str, Any], overrides: Mapping[str, Any], path: Path | None) -> Defaults | None:
        """The settings without the model, when every set value passes its plain check; else None."""
        env = {key.upper(): value for key, value in os.environ.items() if key.upper().startswith(self.env_prefix)}
        if len(env) != sum(1 for key in os.environ if key.upper().startswith(self.env_prefix)):
            return None  # one name set in two spellings: the model decides which wins
        values: dict[str, Any] = {}
        sources: dict[str, Provenance] = {}
        for name in self.defaults:
            variable = f"{self.env_prefix}{name}".upper()
            if name in overrides:
                given, source = overrides[name], Provenance("keyword", f"keyword argument {name}=")
            elif variable in env:
                given, source = env[variable], Provenance("env", f"environment variable {variable}")
            elif name in table and path is not None:
                given, source = table[name], file_provenance(path, self.header, name)
            else:
                continue
            check = self.plain.get(name)
            if check is None:
                return None
            try:
                values[name] = check(given)
            except NotPlain:
                return None
            sources[name] = source
        return Defaults(self, values, sources)


class Defaults:
    """A section's settings read without the model: every field at its default, or at a value
    set by a keyword, a variable or the table that passed the field's plain check. Read like
    the model's instances (attributes, :meth:`source_of`)."""

    def __init__(
        self, spec: SectionSpec, values: Mapping[str, Any] | None = None, sources: Mapping[str, Provenance] | None = None
    ) -> None:
        self.__dict__.update(spec.defaults)
        self.__dict__.update(values or {})
        self._spec = spec
        self._sources = dict(sources or {})

    def source_of(self, field: str) -> Provenance:
        """Where the value of ``field`` came from."""
        return self._sources.get(field, DEFAULT)

    def __repr__(self) -> str:
        values = " ".join(f"{name}={getattr(self, name)!r}" for name in self._spec.defaults)
        return f"Defaults({self._spec.env_prefix}*: {values})"


def plain_name(value: Any) -> str:
    """A backend name: a non-blank string, stripped and lower-cased (``AccelSettings._lower``)."""
    if not isinstance(value, str) or not value.strip():
        raise NotPlain
    return value.strip().lower()


def plain_index(value: Any) -> int:
    """A device index: a whole number >= 0, or a string of ASCII digits."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if type(value) is int and value >= 0:
        return value
    raise NotPlain


#: The autocast dtype names ``amp_dtype`` takes ("auto": the backend's preferred one); the one
#: list: the model's accepted values and the backend's name -> ``torch.dtype`` table derive from it.
AMP_DTYPES = ("auto", "float16", "bfloat16", "float32")
#: Other spellings of :data:`AMP_DTYPES` accepted in ``amp_dtype``.
AMP_ALIASES = {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32", "float": "float32"}


def amp_name(value: str) -> str:
    """An ``amp_dtype`` string in its canonical spelling (``" torch.HALF"`` -> ``"float16"``); not checked."""
    value = value.strip().lower().removeprefix("torch.")
    return AMP_ALIASES.get(value, value)


def plain_amp_dtype(value: Any) -> str:
    """An autocast dtype name or alias (``AccelSettings._amp_alias``), as one of :data:`AMP_DTYPES`."""
    if not isinstance(value, str):
        raise NotPlain
    value = amp_name(value)
    if value not in AMP_DTYPES:
        raise NotPlain
    return value


#: The core's section: ``[tool.accel]`` / ``ACCEL_*``, validated by ``AccelSettings``.
CORE = SectionSpec(
    section="",
    env_prefix="ACCEL_",
    defaults={"backend": "auto", "device_index": None, "amp_dtype": "auto", "fallback": None},
    model="accel_abstraction.settings:AccelSettings",
    plain={"backend": plain_name, "device_index": plain_index, "amp_dtype": plain_amp_dtype, "fallback": plain_name},
)


#: Longest distributed timeout accepted (seconds): 30 days; torch's timedelta arithmetic
#: overflows on much larger values.
MAX_DIST_TIMEOUT = 30 * 86400.0

#: ``[tool.accel.distributed]`` / ``ACCEL_DIST_*`` (read by ``accel.init_distributed()``, whose
#: cost is the process group's, so no plain checks); its model is ``settings.DistSettings``.
DIST = declare(
    "distributed",
    "ACCEL_DIST_",
    {
        "backend": Setting(str | None, None, "Collective library; default: the selected backend's."),
        "init_method": Setting(str | None, None, "torch.distributed init_method; default 'env://'."),
        "timeout": Setting(
            float,
            600.0,
            "Seconds before a collective or rendezvous fails (at most 30 days).",
            {"gt": 0, "le": MAX_DIST_TIMEOUT, "allow_inf_nan": False},
        ),
    },
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


class DistConfig(Protocol):
    """What ``accel.init_distributed()`` reads from :data:`DIST` (the model's instance or ``Defaults``)."""

    @property
    def backend(self) -> str | None: ...
    @property
    def init_method(self) -> str | None: ...
    @property
    def timeout(self) -> float: ...

    def source_of(self, field: str) -> Provenance: ...
