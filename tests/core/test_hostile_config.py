"""Hostile configuration (issue 14): every bad pyproject, variable or keyword ends in one clear error.

In-process through ``accel_abstraction.cli.main`` where possible (a subprocess per case
would cost seconds of torch import each); ``accel run`` / ``accel parity`` share the
settings loader exercised here (``AccelSettings.load``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import accel_abstraction as accel
from accel_abstraction.cli import main
from accel_abstraction.errors import AccelError, ConfigError, DeviceIndexError
from accel_abstraction.settings import AccelSettings, DistSettings

NON_UTF8 = b'[tool.accel]\nbackend = "cpu"\n# caf\xe9 written in Latin-1\n'


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert "Traceback" not in err
    return err


def test_non_utf8_pyproject_is_a_config_error_naming_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_bytes(NON_UTF8)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        AccelSettings.load()
    msg = str(info.value)
    assert f"{tmp_path / 'pyproject.toml'}:3: not UTF-8 text (byte 0xe9" in msg and "re-save the file as UTF-8" in msg
    # the selection every command goes through (accel run / parity select the same way)
    with pytest.raises(ConfigError, match="not UTF-8"):
        accel.device()
    assert main(["info"]) == 1
    out = capsys.readouterr().out
    assert "configuration error:" in out and "not UTF-8" in out


def test_unreadable_pyproject_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], unreadable_pyproject: None
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.accel]\nbackend = "cpu"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        AccelSettings.load()
    assert str(info.value).startswith(f"{pyproject}: cannot read the configuration file (Permission denied)")
    assert main(["info"]) == 1
    assert "cannot read the configuration file" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("call", "suggestion"),
    [
        (lambda: accel.configure(backned="neuron"), "'backned'.*Did you mean 'backend'"),
        (lambda: accel.use("cpu", fallbak="cpu"), "'fallbak'.*Did you mean 'fallback'"),
        (lambda: DistSettings.load(timout=1), "'timout'.*Did you mean 'timeout'"),
    ],
    ids=["configure", "use", "dist"],
)
def test_unknown_settings_keyword_is_an_error_with_did_you_mean(call, suggestion: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=f"unknown setting {suggestion}"):
        call()


def test_unknown_keyword_leaves_the_selection_alone() -> None:
    before = accel.use("cpu")
    with pytest.raises(ConfigError):
        accel.use("cpu", amp_dtyp="float16")
    assert accel.backend() is before


def test_device_index_out_of_range_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_DEVICE_INDEX", "99999999999")
    with pytest.raises(DeviceIndexError) as info:
        accel.device()
    msg = str(info.value)
    assert "device index 99999999999 is out of range for backend 'cpu'" in msg
    assert msg.endswith("(environment variable ACCEL_DEVICE_INDEX)")


def test_bad_neuron_emulate_reports_the_config_error_itself(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACCEL_NEURON_EMULATE", "maybe")
    with pytest.raises(ConfigError) as info:
        accel.use("neuron")
    msg = str(info.value)
    assert msg.startswith("environment variable ACCEL_NEURON_EMULATE: invalid value 'maybe' for 'emulate'")
    assert "factory" not in msg and "Traceback" not in msg
    # backend="auto" reaches the neuron factory too: the user's mistake is reported, not skipped
    with pytest.raises(ConfigError, match="ACCEL_NEURON_EMULATE"):
        accel.use("auto")
    assert main(["info"]) == 1
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "invalid value 'maybe'" in out and "raised ConfigError" not in out


def test_every_library_error_is_an_accel_error() -> None:
    pytest.importorskip("accel_neuron")
    from accel_neuron.emulator.errors import EmulatorError, limit

    assert issubclass(EmulatorError, AccelError) and issubclass(EmulatorError, RuntimeError)
    with pytest.raises(accel.AccelError):
        raise limit("torch.neuron.graphs", "Use eager mode.")


# ---------------------------------------------------------------- issue 38: strict types, BOM, deep values


@pytest.mark.parametrize("value", ["true", "false"])
def test_a_boolean_is_not_a_device_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.accel]\nbackend = "cpu"\ndevice_index = {value}\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        accel.use("cpu")
    msg = str(info.value)
    assert f"{tmp_path / 'pyproject.toml'}:3 [tool.accel] device_index" in msg
    assert "a boolean (true/false) is not a value for this setting" in msg


def test_a_whole_number_device_index_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.accel]\nbackend = "cpu"\ndevice_index = 0\n')
    monkeypatch.chdir(tmp_path)
    assert AccelSettings.load().device_index == 0


BOOLEANS = {"1": True, "TRUE": True, "yes": True, "on": True, "0": False, "False": False, "no": False, "off": False}


@pytest.mark.parametrize(("word", "expected"), BOOLEANS.items())
def test_boolean_settings_take_the_documented_words(monkeypatch: pytest.MonkeyPatch, word: str, expected: bool) -> None:
    from accel_neuron.settings import NEURON

    monkeypatch.setenv("ACCEL_NEURON_EMULATE", word)
    assert NEURON.model_class.load(search=False).emulate is expected


@pytest.mark.parametrize("word", ["2", "t", "y", "maybe", "1.0", ""])
def test_boolean_settings_refuse_other_words(monkeypatch: pytest.MonkeyPatch, word: str) -> None:
    from accel_neuron.settings import NEURON

    monkeypatch.setenv("ACCEL_NEURON_EMULATE", word)
    with pytest.raises(ConfigError, match="environment variable ACCEL_NEURON_EMULATE: invalid value .* must be true or false"):
        NEURON.model_class.load(search=False)


def test_a_number_is_not_a_boolean_in_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_neuron.settings import NEURON

    (tmp_path / "pyproject.toml").write_text("[tool.accel.neuron]\nemulate = 1\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"pyproject.toml:2 \[tool.accel.neuron\] emulate: invalid value 1"):
        NEURON.model_class.load()


def test_a_utf8_bom_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b'\xef\xbb\xbf[tool.accel]\nbackend = "cpu"\ndevice_index = 0\n')
    monkeypatch.chdir(tmp_path)
    settings = AccelSettings.load()
    assert settings.backend == "cpu" and settings.device_index == 0
    assert str(settings.source_of("device_index")) == f"{tmp_path / 'pyproject.toml'}:3 [tool.accel] device_index"
    assert accel.device().type == "cpu"


def test_a_deep_array_in_tool_accel_is_one_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.accel]\nbackend = " + "[" * 50000 + "]" * 50000 + "\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="nests arrays or tables too deeply to read"):
        accel.device()
    assert main(["scan", "."]) == 2
    assert "nests arrays or tables too deeply" in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("value", "reason"),
    [('["ACC104"', "not JSON"), ("[" * 30000 + "]" * 30000, "JSON nested too deeply to read"), ("ACC104", "not JSON")],
)
def test_scan_ignore_variable_that_is_not_json_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str, reason: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("import torch\n")
    monkeypatch.setenv("ACCEL_SCAN_IGNORE", value)
    assert main(["scan", "a.py"]) == 2
    err = _one_line_error(capsys)
    assert err.startswith("accel: error: environment variable ACCEL_SCAN_IGNORE=") and reason in err
