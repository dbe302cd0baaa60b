"""Configuration: which backend, and how, from keywords, ``ACCEL_*`` variables or ``[tool.accel]``.

Sources, highest precedence first:

1. keyword arguments (``accel.configure(backend="cpu")``, ``accel.use("cpu")``);
2. environment variables with the section's prefix (``ACCEL_BACKEND=neuron``);
3. the section's table in the nearest ``pyproject.toml`` (searching from the working
   directory upwards): ``[tool.accel]``, ``[tool.accel.distributed]``, ...;
4. the defaults declared by the section's rows.

Every in-tree section is declared once, as :class:`~accel_abstraction.sections.Setting` rows
(:mod:`accel_abstraction.sections`: the core's and the distributed; ``porting.settings``:
scan; ``accel_neuron.settings``), and its model is built here from the rows
(:func:`declared_model`): :data:`AccelSettings`, :data:`DistSettings`, ... :class:`ConfigSection`
is their base, and a third-party plugin may still subclass it by hand. Loading goes through
:meth:`ConfigSection.load`, which turns every validation failure into a
:class:`~accel_abstraction.errors.ConfigError` naming the variable or the file and line
the bad value came from, and the accepted values.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from .errors import ConfigError
from .pyproject import (
    Provenance,
    check_keywords,
    file_provenance,
    find_pyproject,
    read_section_table,
    toml_key_line,
)
from .sections import CORE, DIST, SectionSpec, Setting

__all__ = [
    "BOOL_WORDS",
    "AccelSettings",
    "ConfigSection",
    "DistSettings",
    "Provenance",
    "declared_model",
    "find_pyproject",
    "toml_key_line",
]

S = TypeVar("S", bound="ConfigSection")

#: The words a boolean setting takes from an environment variable (any case), and their value.
BOOL_WORDS: dict[str, bool] = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


class ConfigSection(BaseSettings):
    """Base of a configuration section. Subclasses set ``section`` and ``model_config``.

    ``section`` is the sub-table name below ``[tool.accel]`` (``""`` for the root table);
    use :func:`section_config` to build the matching ``model_config``.
    """

    section: ClassVar[str] = ""
    _provenance: dict[str, Provenance]

    @field_validator("*", mode="before")
    @classmethod
    def _strict_types(cls, value: Any, info: ValidationInfo) -> Any:
        """Booleans only where a boolean is meant: ``device_index = true`` is not device 1, and
        a boolean setting takes ``true``/``false`` (TOML, keywords) or one of :data:`BOOL_WORDS`
        (environment), not ``2`` or ``"maybe"``; pydantic's lax mode would take all of them."""
        annotation = cls.model_fields[info.field_name or ""].annotation
        wants_bool = annotation is bool or annotation == (bool | None)
        if wants_bool:
            if isinstance(value, bool) or value is None:
                return value
            if isinstance(value, str) and value.strip().lower() in BOOL_WORDS:
                return BOOL_WORDS[value.strip().lower()]
            raise ValueError(f"must be true or false (in the environment: {', '.join(BOOL_WORDS)})")
        if isinstance(value, bool):
            raise ValueError("a boolean (true/false) is not a value for this setting")
        return value

    @classmethod
    def env_prefix(cls) -> str:
        return str(cls.model_config.get("env_prefix", "ACCEL_"))

    @classmethod
    def table_header(cls) -> tuple[str, ...]:
        return ("tool", "accel", cls.section) if cls.section else ("tool", "accel")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Keywords, then the environment. The file's values reach the model as keywords that
        # neither a keyword nor a variable sets (load() below): no state shared between loads.
        return (init_settings, env_settings)

    @classmethod
    def load(cls: type[S], pyproject: Path | None = None, *, search: bool = True, **overrides: Any) -> S:
        """Build the section from keywords, environment and the nearest ``pyproject.toml``.

        ``pyproject`` names the file explicitly; without it :func:`find_pyproject` finds it
        from the working directory, unless ``search=False`` (no file: a tool that already
        looked for the project's file elsewhere). Raises :class:`ConfigError` naming the
        source of any invalid value.
        """
        check_keywords(overrides, cls.model_fields, cls.table_header())
        path = pyproject or (find_pyproject() if search else None)
        table = _read_table(path, cls) if path is not None else {}
        overrides = {k: v for k, v in overrides.items() if v is not None}
        variables = {key.upper() for key in os.environ}
        from_file = {
            name: table[name]
            for name in cls.model_fields
            if name in table and name not in overrides and _env_name(cls, name) not in variables
        }
        try:
            instance = cls(**from_file, **overrides)
        except ValidationError as exc:
            raise _config_error(cls, exc, overrides, path) from None
        except (SettingsError, RecursionError):  # a list or table variable that is not (readable) JSON
            raise _json_variable_error(cls) from None
        instance._provenance = {
            name: _provenance_of(cls, name, overrides, table, path) for name in cls.model_fields
        }
        return instance

    def source_of(self, field: str) -> Provenance:
        """Where the value of ``field`` came from."""
        prov = getattr(self, "_provenance", None) or {}
        return prov.get(field, Provenance("default", "default"))


def section_config(env_prefix: str) -> SettingsConfigDict:
    """The ``model_config`` of a section whose variables start with ``env_prefix``."""
    return SettingsConfigDict(
        env_prefix=env_prefix,
        extra="ignore",
        validate_default=True,
    )


def _read_table(path: Path, cls: type[ConfigSection]) -> dict[str, Any]:
    """The section's table from ``path``, after checking the file parses and the table is a table."""
    return read_section_table(path, cls.table_header(), set(cls.model_fields))


def _env_name(cls: type[ConfigSection], field: str) -> str:
    return f"{cls.env_prefix()}{field}".upper()


def _provenance_of(
    cls: type[ConfigSection], field: str, overrides: Mapping[str, Any], table: Mapping[str, Any], path: Path | None
) -> Provenance:
    if field in overrides:
        return Provenance("keyword", f"keyword argument {field}=")
    env = _env_name(cls, field)
    if env in os.environ:
        return Provenance("env", f"environment variable {env}")
    if field in table and path is not None:
        return file_provenance(path, cls.table_header(), field)
    return Provenance("default", "default")


def _json_variable_error(cls: type[ConfigSection]) -> ConfigError:
    """The error for a list or table setting whose environment variable does not parse as JSON."""
    import json

    for name in cls.model_fields:
        env = _env_name(cls, name)
        raw = next((value for key, value in os.environ.items() if key.upper() == env), None)
        if raw is None:
            continue
        try:
            json.loads(raw)
        except ValueError as exc:
            reason = f"not JSON: {exc}"
        except RecursionError:
            reason = "JSON nested too deeply to read"
        else:
            continue
        shown = raw if len(raw) <= 40 else raw[:37] + "..."
        return ConfigError(
            f"environment variable {env}={shown!r}: {reason}; write the {name!r} setting as a JSON list, "
            f"e.g. {env}='[\"ACC104\"]', or unset it"
        )
    return ConfigError(
        f"an {cls.env_prefix}* environment variable holding a list or table is not JSON; write it as JSON or unset it"
    )


def _config_error(
    cls: type[ConfigSection], exc: ValidationError, overrides: Mapping[str, Any], path: Path | None
) -> ConfigError:
    table = _read_table(path, cls) if path is not None else {}
    lines = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else "?"
        prov = _provenance_of(cls, field, overrides, table, path)
        value = err.get("input")
        msg = str(err["msg"]).removeprefix("Value error, ")
        lines.append(f"{prov}: invalid value {value!r} for {field!r}: {msg}")
    return ConfigError("; ".join(lines))


def declared_model(spec: SectionSpec) -> type[ConfigSection]:
    """The :class:`ConfigSection` of a section declared with :func:`~accel_abstraction.sections.declare`:
    one field per :class:`~accel_abstraction.sections.Setting` (its type, default, description,
    limits, ``before`` and ``after`` validators). Named after the section (``neuron`` ->
    ``NeuronSettings``; the root table: ``AccelSettings``)."""
    name = "".join(part.title() for part in (spec.section or "accel").replace("-", "_").split("_")) + "Settings"
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": f"[{'.'.join(spec.header)}] / {spec.env_prefix}*: built from its declaration.",
        "__annotations__": {"section": ClassVar[str], **{f: s.type for f, s in spec.settings.items()}},
        "model_config": section_config(spec.env_prefix),
        "section": spec.section,
        **{f: _field(s) for f, s in spec.settings.items()},
    }
    for f, s in spec.settings.items():
        # a field's own "before" step runs ahead of ConfigSection._strict_types (pydantic runs a
        # subclass's before-validators first), as an alias must be resolved before the type check
        if s.before is not None:
            namespace[f"_before_{f}"] = field_validator(f, mode="before")(_validator(s.before))
        if s.after is not None:
            namespace[f"_after_{f}"] = field_validator(f, mode="after")(_validator(s.after))
    return type(name, (ConfigSection,), namespace)


def _field(setting: Setting) -> Any:
    if isinstance(setting.default, (list, dict)):  # a fresh copy per instance
        factory = functools.partial(copy.copy, setting.default)
        return Field(default_factory=factory, description=setting.description, **setting.limits)
    return Field(setting.default, description=setting.description, **setting.limits)


def _validator(check: Callable[[Any], Any]) -> Any:
    return classmethod(lambda cls, value: check(value))


#: ``[tool.accel]`` / ``ACCEL_*``: the core's settings (declared in :data:`.sections.CORE`).
AccelSettings: type[ConfigSection] = CORE.model_class
#: ``[tool.accel.distributed]`` / ``ACCEL_DIST_*``: distributed overrides (declared in :data:`.sections.DIST`).
DistSettings: type[ConfigSection] = DIST.model_class
