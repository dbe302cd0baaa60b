"""The fast path (plain checks, no pydantic) and the model agree on every setting of every section.

The cases are generated from the declarations (each :class:`~accel_abstraction.sections.Setting`'s
type, default, limits and examples), not listed by hand: a new setting, or a new plain check, is
covered without touching this file. Each value is given as a keyword, as a ``pyproject.toml``
value and as an environment variable; :meth:`SectionSpec.load` (which answers from the plain
checks when it can) must give what the model's ``load`` gives: the same value and source, or the
same error.
"""

from __future__ import annotations

import json
import math
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from accel_abstraction.errors import ConfigError
from accel_abstraction.sections import Defaults, SectionSpec, Setting


def _sections() -> list[SectionSpec]:
    from accel_abstraction.effective_config import config_sections

    return list(config_sections())


def _without_none(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    return [annotation]


def _bounds(limits: typing.Mapping[str, Any], step: float) -> list[Any]:
    """The values at and just past each limit (``ge``/``gt``/``le``/``lt``)."""
    values: list[Any] = []
    for key, edge, past in (("ge", 0, -step), ("gt", step, 0), ("le", 0, step), ("lt", -step, 0)):
        if key in limits:
            values += [limits[key] + edge, limits[key] + past]
    return values


def _values_of(kind: Any, limits: typing.Mapping[str, Any]) -> list[Any]:
    """Valid, plain and invalid values of one type, from the type and its limits."""
    common: list[Any] = [True, "", "   "]  # a boolean where none is meant; blank text
    if kind is bool:
        return [True, False, "1", "yes", " Off ", "FALSE", "maybe", "2", 2, 0, 1.0, ""]
    if kind is int:
        edges = _bounds(limits, 1) or [0, -1]
        low = edges[0]
        return [*edges, str(low), f" {low}", f"{low}.0", "12", "x", "\u0661", 1.5, 10**30, *common]
    if kind is float:
        edges = _bounds(limits, 0.5) or [0.0, -1.0]
        return [*edges, 1, "30", "1e3", math.inf, math.nan, "inf", "nan", "x", *common]
    if kind is str:
        return ["value", " Value ", "auto", 3, 1.5, *common]
    if typing.get_origin(kind) is typing.Literal:
        words = [arg for arg in typing.get_args(kind) if isinstance(arg, str)]
        return [*words, *(w.upper() for w in words), *(f" {w} " for w in words), "none-of-these", 16, *common]
    if typing.get_origin(kind) is list:
        return [[], ["ACC104"], ["ACC1", "manual"], "ACC104", [1], [True], [""], 3]
    raise AssertionError(f"no value generator for type {kind!r}: add one here")


def cases(setting: Setting) -> list[Any]:
    """Every value fed to a setting: its default, its examples, and values derived from its type."""
    values = [setting.default, *setting.examples]
    for kind in _without_none(setting.type):
        values += _values_of(kind, setting.limits)
    unique: list[Any] = []
    for value in values:
        if value is not None and not any(type(value) is type(u) and repr(value) == repr(u) for u in unique):
            unique.append(value)
    return unique


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string (JSON's escapes are TOML's)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise AssertionError(f"no TOML spelling for {value!r}")


def _env(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, list) else str(value)


def _outcome(spec: SectionSpec, load: Any, **keywords: Any) -> Any:
    try:
        loaded = load(**keywords)
    except ConfigError as exc:
        return "error", str(exc)
    values = {name: getattr(loaded, name) for name in spec.settings}
    # nan != nan: compare its text
    shown = {name: repr(v) if isinstance(v, float) and math.isnan(v) else v for name, v in values.items()}
    return {name: (shown[name], str(loaded.source_of(name))) for name in spec.settings}, isinstance(loaded, Defaults)


FIELDS = [
    pytest.param(spec, name, id=f"{spec.env_prefix}{name}".upper())
    for spec in _sections()
    if isinstance(spec, SectionSpec)  # a third-party plugin's hand-written ConfigSection has no rows
    for name in spec.settings
]


def test_every_in_tree_section_is_declared_once_as_rows() -> None:
    sections = _sections()
    assert {s.env_prefix for s in sections} >= {"ACCEL_", "ACCEL_DIST_", "ACCEL_SCAN_"}
    assert all(isinstance(s, SectionSpec) and s.settings for s in sections), [
        s for s in sections if not isinstance(s, SectionSpec)
    ]


@pytest.mark.parametrize(("spec", "name"), FIELDS)
def test_the_fast_path_agrees_with_the_model(
    spec: SectionSpec, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    model = spec.model_class
    pyproject = tmp_path / "pyproject.toml"
    header = "[" + ".".join(spec.header) + "]"
    disagreements: list[str] = []
    kinds: set[str] = set()

    def compare(how: str, value: Any, **keywords: Any) -> None:
        fast, slow = _outcome(spec, spec.load, **keywords), _outcome(spec, model.load, **keywords)
        if fast[0] != slow[0]:
            disagreements.append(f"{how} {value!r}: fast path {fast[0]!r}, model {slow[0]!r}")
        kinds.add("error" if fast[0] == "error" else ("plain" if fast[1] else "model"))

    for value in cases(spec.settings[name]):
        pyproject.write_text(f"{header}\n{name} = {_toml(value)}\n", encoding="utf-8")
        compare("pyproject value", value)
        pyproject.unlink()
        compare("keyword", value, **{name: value})
        monkeypatch.setenv(spec.variable(name), _env(value))
        compare(f"{spec.variable(name)}=", _env(value))
        monkeypatch.delenv(spec.variable(name))
    assert not disagreements, "\n".join(disagreements)
    # the generated values reach every outcome the field has: refused, and accepted by the
    # plain check (a field that has one) or by the model
    expected = {"error", "plain" if name in spec.plain else "model"}
    assert expected <= kinds, f"the generated values of {name} reached only {sorted(kinds)}"
