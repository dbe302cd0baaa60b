"""Configuration sections: defaults declared once, pydantic only when something is set."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel_abstraction.errors import ConfigError
from accel_abstraction.sections import CORE, DIST, Defaults

from .conftest import run_python


def _neuron_spec():
    pytest.importorskip("accel_neuron")
    from accel_neuron.settings import NEURON

    return NEURON


@pytest.mark.parametrize("spec_name", ["core", "distributed", "neuron"])
def test_the_models_fields_and_defaults_are_the_specs(spec_name: str, tmp_path: Path, monkeypatch) -> None:
    spec = {"core": CORE, "distributed": DIST}.get(spec_name) or _neuron_spec()
    model = spec.model_class
    assert set(model.model_fields) == set(spec.defaults)
    assert model.section == spec.section and model.env_prefix() == spec.env_prefix
    monkeypatch.chdir(tmp_path)  # no pyproject.toml: every value is the default
    validated = model.load()
    for field, default in spec.defaults.items():
        assert getattr(validated, field) == default


def test_nothing_set_loads_defaults_without_importing_pydantic(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.accel.scan]\nexclude = ['x']\n")  # a sub-table only
    result = run_python(
        """
        import sys
        import accel_abstraction as accel
        accel.device()
        from accel_abstraction import runtime
        print(type(runtime._settings).__name__, runtime._settings.backend, runtime._settings.source_of("backend"))
        print(sorted(m for m in ("pydantic", "pydantic_settings") if m in sys.modules))
        """,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["Defaults auto default", "[]"]


def test_first_use_in_a_project_without_accel_settings_imports_only_what_selection_needs(tmp_path: Path) -> None:
    # the common case measured by benchmarks/bench_core.py: a project's pyproject.toml that says
    # nothing about accel is not parsed; the CLI's command table is not built for a script
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    result = run_python(
        """
        import sys
        import accel_abstraction as accel
        accel.device()
        heavy = ("pydantic", "pydantic_settings", "tomllib", "tomli", "accel_abstraction.commands")
        print(sorted(m for m in heavy if m in sys.modules))
        """,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]"]


def test_a_broken_pyproject_that_never_mentions_accel_is_not_ours_to_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b"[project\nname = caf\xe9\n")  # not TOML, not UTF-8
    monkeypatch.chdir(tmp_path)
    assert CORE.load().backend == "auto"
    (tmp_path / "pyproject.toml").write_bytes(b"[project\n[tool.accel]\nbackend = 'cpu'\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        CORE.load()


@pytest.mark.parametrize(
    ("env", "pyproject", "expected"),
    [
        ({"ACCEL_BACKEND": "CPU"}, "", "cpu environment variable ACCEL_BACKEND"),
        ({}, "[tool.accel]\nbackend = 'cpu'\n", "cpu {path}:2 [tool.accel] backend"),
    ],
)
def test_plain_values_are_read_with_their_source_without_the_model(
    env: dict[str, str], pyproject: str, expected: str, tmp_path: Path
) -> None:
    if pyproject:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    result = run_python(
        """
        from accel_abstraction.sections import CORE
        s = CORE.load()
        print(type(s).__name__, s.backend, s.source_of("backend"))
        """,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Defaults " + expected.format(path=tmp_path / "pyproject.toml")


def test_defaults_read_like_the_model(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = CORE.load()
    assert isinstance(settings, Defaults)
    assert (settings.backend, settings.device_index, settings.amp_dtype, settings.fallback) == ("auto", None, "auto", None)
    assert str(settings.source_of("amp_dtype")) == "default"


@pytest.mark.parametrize(
    ("env", "pyproject"),
    [
        ({"ACCEL_BACKEND": "cpu"}, ""),
        ({}, "[tool.accel]\nbackend = 'cpu'\namp_dtype = 'bf16'\ndevice_index = 0\n"),
    ],
)
def test_a_configured_first_use_does_not_import_pydantic(env: dict[str, str], pyproject: str, tmp_path: Path) -> None:
    # benchmarks/bench_core.py "first use, ACCEL_BACKEND set": the one-line configuration costs what none costs
    if pyproject:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    result = run_python(
        """
        import sys
        import accel_abstraction as accel
        accel.device()
        print(accel.backend().name, sorted(m for m in ("pydantic", "pydantic_settings") if m in sys.modules))
        """,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["cpu []"]


# the plain checks against the model: tests/core/test_settings_agreement.py (cases generated from the rows)


def test_amp_dtype_names_come_from_one_list() -> None:
    """The model's accepted values and the backend's name -> dtype table are both sections.AMP_DTYPES."""
    import typing

    import torch

    from accel_abstraction import interface
    from accel_abstraction.sections import AMP_ALIASES, AMP_DTYPES
    from accel_abstraction.settings import AccelSettings

    assert typing.get_args(AccelSettings.model_fields["amp_dtype"].annotation) == AMP_DTYPES
    assert {name: getattr(torch, name) for name in AMP_DTYPES if name != "auto"} == dict(interface._AMP_DTYPES)
    assert set(AMP_ALIASES.values()) <= set(AMP_DTYPES)


def test_the_typed_views_name_exactly_the_declared_fields() -> None:
    """The Protocols that type-check readers of a section (static types cannot come from the rows)
    list exactly the fields the section declares."""
    from accel_abstraction.porting.settings import SCAN, ScanConfig
    from accel_abstraction.sections import CoreSettings, DistConfig

    for protocol, spec in ((CoreSettings, CORE), (DistConfig, DIST), (ScanConfig, SCAN)):
        members = {name for name in vars(protocol) if not name.startswith("_") and name != "source_of"}
        assert members == set(spec.settings), f"{protocol.__name__} drifted from {spec.env_prefix}*"
