"""Configuration sources, their precedence, and errors that name where a bad value came from."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accel_abstraction.errors import ConfigError
from accel_abstraction.settings import AccelSettings, DistSettings

from .conftest import run_python


def project(tmp_path: Path, body: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(body))
    return tmp_path


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = AccelSettings.load()
    assert (s.backend, s.device_index, s.amp_dtype, s.fallback) == ("auto", None, "auto", None)
    assert s.source_of("backend").kind == "default"


def test_pyproject_then_env_then_keyword(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path, """
        [project]
        name = "demo"

        [tool.accel]
        backend = "neuron"
        amp_dtype = "bf16"
    """)
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)  # the nearest pyproject.toml is found from a subdirectory
    s = AccelSettings.load()
    assert s.backend == "neuron" and s.amp_dtype == "bfloat16"
    assert s.source_of("backend").detail == f"{tmp_path / 'pyproject.toml'}:6 [tool.accel] backend"
    monkeypatch.setenv("ACCEL_BACKEND", "CPU")
    s = AccelSettings.load()
    assert s.backend == "cpu" and s.source_of("backend").detail == "environment variable ACCEL_BACKEND"
    assert s.amp_dtype == "bfloat16"
    s = AccelSettings.load(backend="cuda")
    assert s.backend == "cuda" and s.source_of("backend").kind == "keyword"


def test_misspelled_amp_dtype_names_the_variable_and_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ACCEL_AMP_DTYPE", "bfloat61")
    with pytest.raises(ConfigError) as info:
        AccelSettings.load()
    msg = str(info.value)
    assert "environment variable ACCEL_AMP_DTYPE" in msg and "'bfloat61'" in msg
    assert "'bfloat16'" in msg and "'float16'" in msg
    assert "\n" not in msg


def test_negative_device_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ACCEL_DEVICE_INDEX", "-1")
    with pytest.raises(ConfigError, match=r"ACCEL_DEVICE_INDEX: invalid value '-1'.*greater than or equal to 0"):
        AccelSettings.load()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("[tool.accel]\nbackend = cpu\n", r"pyproject.toml: invalid TOML .*line 2", id="invalid TOML"),
        pytest.param(
            '[project]\nname = "x"\n\n[tool]\naccel = "cpu"\n',
            r"pyproject.toml:5: \[tool.accel\] must be a table, not str",
            id="tool.accel not a table",
        ),
        pytest.param(
            '[tool.accel]\nbakend = "cpu"\n\n[tool.accel.neuron]\nemulate = true\n',
            r"pyproject.toml:2: unknown key 'bakend'.*Did you mean 'backend'",
            id="unknown key",
        ),
        pytest.param(
            '[tool.accel]\nbackend = "cpu"\ndevice_index = "first"\n',
            r"pyproject.toml:3 \[tool.accel\] device_index: invalid value 'first'",
            id="wrong type",
        ),
    ],
)
def test_a_bad_file_is_one_error_naming_file_and_line(
    content: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path, content)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message):
        AccelSettings.load()


def test_distributed_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path, '[tool.accel]\nbackend = "cpu"\n\n[tool.accel.distributed]\ntimeout = 30\n')
    monkeypatch.chdir(tmp_path)
    assert DistSettings.load().timeout == 30
    monkeypatch.setenv("ACCEL_DIST_TIMEOUT", "0")
    with pytest.raises(ConfigError, match="ACCEL_DIST_TIMEOUT"):
        DistSettings.load()


@pytest.mark.slow
def test_switching_pyproject_switches_the_device_type(tmp_path: Path) -> None:
    code = "import accel_abstraction as accel; print(accel.device_type())"
    project(tmp_path, '[tool.accel]\nbackend = "cpu"\n')
    assert run_python(code, cwd=tmp_path).stdout.strip() == "cpu"
    project(tmp_path, '[tool.accel]\nbackend = "neuron"\n\n[tool.accel.neuron]\nemulate = true\n')
    result = run_python(code, cwd=tmp_path)
    assert result.stdout.strip() == "neuron", result.stderr
