"""``accel config show``: every effective setting with its value and where it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accel_abstraction.cli import main
from accel_abstraction.effective_config import effective_settings


def _rows(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, object]]:
    assert main(["config", "show", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    return {f"{r['table']}.{r['key']}": r for r in document["settings"]}


def test_each_value_names_its_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.accel]\nbackend = "cpu"\namp_dtype = "bf16"\n\n[tool.accel.distributed]\ntimeout = 30\n'
    )
    monkeypatch.chdir(tmp_path)
    rows = _rows(capsys)
    assert rows["tool.accel.backend"]["value"] == "cpu"
    assert rows["tool.accel.backend"]["source"] == f"{tmp_path / 'pyproject.toml'}:5 [tool.accel] backend"
    assert rows["tool.accel.amp_dtype"]["value"] == "bfloat16"  # the effective value, alias resolved
    assert rows["tool.accel.distributed.timeout"]["value"] == 30.0
    assert rows["tool.accel.distributed.timeout"]["source"].endswith("pyproject.toml:9 [tool.accel.distributed] timeout")
    assert rows["tool.accel.fallback"] == {
        "table": "tool.accel", "key": "fallback", "variable": "ACCEL_FALLBACK", "value": None, "kind": "default", "source": "default",
    }  # fmt: skip
    assert "tool.accel.scan.select" in rows  # the scanner's section too
    assert "tool.accel.neuron.emulate" in rows  # a plugin's section, through accel_config_sections

    monkeypatch.setenv("ACCEL_BACKEND", "neuron")  # the variable beats the file, and says so
    rows = _rows(capsys)
    assert (rows["tool.accel.backend"]["value"], rows["tool.accel.backend"]["source"]) == ("neuron", "environment variable ACCEL_BACKEND")
    assert rows["tool.accel.backend"]["kind"] == "env"

    assert main(["config", "show"]) == 0
    text = capsys.readouterr().out.splitlines()
    line = next(t for t in text if t.startswith("tool.accel.backend "))
    assert line.split() == ["tool.accel.backend", "ACCEL_BACKEND", '"neuron"', "environment", "variable", "ACCEL_BACKEND"]
    assert text[-1] == f"(pyproject.toml read: {tmp_path / 'pyproject.toml'})"


def test_keywords_are_reported_as_keywords(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = {(r.table, r.key): r for r in effective_settings(None, **{"tool.accel": {"backend": "cpu"}})}
    assert rows[("tool.accel", "backend")].kind == "keyword"
    assert rows[("tool.accel", "backend")].source == "keyword argument backend="


def test_a_bad_value_is_one_error_line_naming_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ACCEL_DIST_TIMEOUT", "soon")
    assert main(["config", "show"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("accel: error: environment variable ACCEL_DIST_TIMEOUT: invalid value 'soon'")
    assert len(err.splitlines()) == 1
