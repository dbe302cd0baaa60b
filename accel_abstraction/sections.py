"""Configuration sections declared without pydantic, and loaded without it when nothing is set.

A section is one ``[tool.accel...]`` table with its ``ACCEL_...`` variables: the core's
(``[tool.accel]``, ``ACCEL_*``), the distributed and scan ones, and any plugin's
(``[tool.accel.neuron]``, ``ACCEL_NEURON_*``). It is declared once, with :func:`declare`: one
:class:`Setting` row per field (type, default, meaning, limits, validators, plain check). From
the rows come the variable names, the table keys, the defaults, the validating pydantic model
(:func:`~accel_abstraction.settings.declared_model`, built only when a value needs it), the
fast path below, ``docs/settings.md`` and the test that the fast path agrees with the model.

:meth:`SectionSpec.load` answers a run in which no keyword, no variable and no key of the
table sets a field with :class:`Defaults` (a few microseconds); so too a run whose set values
are all plain (``ACCEL_BACKEND=cpu``, ``backend = "cpu"``: each field's plain check accepts
it), with each value's source. Every other run goes to the model's ``load`` (same precedence,
and every error message is the model's). Importing pydantic and pydantic-settings costs
~150 ms, about 12% of ``import torch``; before this, the first ``accel.device()`` paid it
in every process, and before the plain checks every configured one did.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

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
    """One field of a declared section: everything about it, in one row.

    From the rows of a section come its environment variables (prefix + name), its
    ``pyproject.toml`` keys (the names), its defaults, the validating pydantic model
    (:func:`~accel_abstraction.settings.declared_model`: type, default, description, limits,
    validators), the fast path that needs no pydantic (``plain``), the settings reference
    (``docs/settings.md``) and the test that the fast path and the model agree.
    """

    type: Any
    """The field's type, as a runtime annotation (``bool``, ``int``, ``str | None``, ``list[str]``)."""
    default: Any
    """The default; a list default is copied for each loaded instance."""
    description: str
    limits: Mapping[str, Any] = field(default_factory=dict)
    """pydantic ``Field`` constraints: ``ge``, ``le``, ``gt``, ``allow_inf_nan``."""
    plain: PlainCheck | None = None
    """The field's plain check (fast path): a set value it accepts is loaded without the model.
    It must give what the model gives for every value it accepts (a test generated from the
    rows compares them); values it refuses (:class:`NotPlain`) go to the model, so every error
    message is the model's. ``None``: a set value always goes to the model."""
    before: Callable[[Any], Any] | None = None
    """The model's validator run on the raw value before type checks (an alias -> its canonical
    spelling); raises ``ValueError`` with the message shown after the value's source."""
    after: Callable[[Any], Any] | None = None
    """The model's validator run on the typed value (normalise, refuse); raises ``ValueError``."""
    examples: tuple[Any, ...] = ()
    """Values the agreement test feeds besides those it derives from the type and limits: the
    spellings a validator knows of (aliases), which no type says."""


def declare(section: str, env_prefix: str, settings: Mapping[str, Setting]) -> SectionSpec:
    """A section declared in one place: its fields' types, defaults, meanings, limits and checks.

    The validating model is built from ``settings`` when a set value needs it; nothing here
    imports pydantic.
    """
    return SectionSpec(section, env_prefix, settings)


@dataclass(frozen=True)
class SectionSpec:
    """One configuration section: table, variable prefix and its :class:`Setting` rows."""

    section: str
    """Sub-table below ``[tool.accel]`` (``""``: the root table)."""
    env_prefix: str
    """Prefix of the section's environment variables (``ACCEL_``, ``ACCEL_NEURON_``)."""
    settings: Mapping[str, Setting]
    """Field name -> its declaration; the model's fields are exactly these."""

    @functools.cached_property
    def defaults(self) -> Mapping[str, Any]:
        """Field name -> default."""
        return {name: setting.default for name, setting in self.settings.items()}

    @functools.cached_property
    def plain(self) -> Mapping[str, PlainCheck]:
        """Field name -> its plain check (only the fields that have one)."""
        return {name: s.plain for name, s in self.settings.items() if s.plain is not None}

    @functools.cached_property
    def model_class(self) -> Any:
        """The pydantic model validating the section (imports pydantic; built once)."""
        from .settings import declared_model

        return declared_model(self)

    @property
    def header(self) -> tuple[str, ...]:
        return ("tool", "accel", self.section) if self.section else ("tool", "accel")

    def variable(self, name: str) -> str:
        """The environment variable of field ``name`` (``backend`` -> ``ACCEL_BACKEND``)."""
        if name not in self.settings:
            raise KeyError(f"{'.'.join(self.header)} has no setting {name!r}")
        return f"{self.env_prefix}{name}".upper()

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
        self.__dict__.update({name: copy.copy(value) for name, value in spec.defaults.items()})
        self.__dict__.update(values or {})
        self._spec = spec
        self._sources = dict(sources or {})

    def source_of(self, field: str) -> Provenance:
        """Where the value of ``field`` came from."""
        return self._sources.get(field, DEFAULT)

    def __repr__(self) -> str:
        values = " ".join(f"{name}={getattr(self, name)!r}" for name in self._spec.defaults)
        return f"Defaults({self._spec.env_prefix}*: {values})"


def backend_name(value: str | None) -> str | None:
    """The model's check of a backend name: stripped and lower-cased; blank is refused."""
    if value is None:
        return None
    value = value.strip().lower()
    if not value:
        raise ValueError("must not be empty")
    return value


def plain_name(value: Any) -> str:
    """A backend name without the model: a non-blank string, as :func:`backend_name` gives it."""
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


def amp_alias(value: Any) -> Any:
    """The model's ``before`` step for ``amp_dtype``: a string in its canonical spelling, anything else as given."""
    return amp_name(value) if isinstance(value, str) else value


def plain_amp_dtype(value: Any) -> str:
    """An autocast dtype name or alias, as one of :data:`AMP_DTYPES`."""
    if not isinstance(value, str):
        raise NotPlain
    value = amp_name(value)
    if value not in AMP_DTYPES:
        raise NotPlain
    return value


#: The core's section: ``[tool.accel]`` / ``ACCEL_*`` (its model: ``settings.AccelSettings``).
CORE = declare(
    "",
    "ACCEL_",
    {
        "backend": Setting(
            str,
            "auto",
            "Backend name or alias; 'auto' picks the available backend with the highest priority.",
            plain=plain_name,
            after=backend_name,
        ),
        "device_index": Setting(
            int | None, None, "Device index made current at selection.", {"ge": 0}, plain=plain_index
        ),
        "amp_dtype": Setting(
            Literal[AMP_DTYPES],
            "auto",
            "Autocast dtype; 'auto' takes the backend's preferred one.",
            plain=plain_amp_dtype,
            before=amp_alias,
            examples=(*AMP_ALIASES, " torch.HALF ", "float64"),
        ),
        "fallback": Setting(
            str | None,
            None,
            "Backend to use, with a warning, when the named backend is unavailable ('auto' allowed).",
            plain=plain_name,
            after=backend_name,
        ),
    },
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
