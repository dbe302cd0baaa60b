"""accel parity refuses bad options with one clear line (exit 2) before running anything (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import TINY, parity


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert parity(TINY, *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("accel: error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--backends", ""], "--backends '' names no backend"),  # used to run the defaults
        (["--backends", " , "], "--backends ' , ' names no backend"),
        (["--timeout", "0"], "--timeout must be a number of seconds > 0 (got 0)"),  # used to be accepted
        (["--timeout", "-5"], "--timeout must be a number of seconds > 0 (got -5)"),
        (["--timeout", "nan"], "--timeout must be a number of seconds > 0 (got nan)"),
        (["--rtol", "nan"], "--rtol must be a finite number >= 0 (got nan)"),
        (["--atol", "-1"], "--atol must be a finite number >= 0 (got -1.0)"),
        (["--metric", "iter (?P<step>"], "is not a valid regular expression"),
        (["--metric", r"loss (?P<loss>\S+)"], "needs a named group 'step' and at least one metric group"),
        (["--allow-missing"], "--allow-missing only applies with --redirect"),
        (["--reference-run", "cpu"], "--reference-run needs --reference FILE"),
    ],
)
def test_bad_option_is_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert message in refused(capsys, *args, "--out", str(out))
    assert not out.exists() or not any(out.iterdir())  # nothing ran


def test_out_pointing_at_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"  # issue 14 item 11: FileExistsError after the runs
    afile.write_text("keep me\n")
    assert f"--out {afile} is a file, not a folder" in refused(capsys, "--out", str(afile))
    assert afile.read_text() == "keep me\n"
    below = afile / "sub"
    assert f"--out {below}: cannot create the folder" in refused(capsys, "--out", str(below))


def test_record_pointing_at_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, "--out", str(tmp_path / "out"), "--record", str(tmp_path))
    assert f"--record {tmp_path} is a folder; give a file name" in err


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        ("{not json", "is not JSON (line 1, column 2"),
        ("[1, 2]", "is not a parity.json document (no 'runs' list)"),
        ('{"schema_version": 99, "runs": []}', "has schema 'accel-parity' version 99; this accel reads"),
        ('{"schema": "other", "schema_version": 2, "runs": []}', "has schema 'other'"),
        (
            '{"schema_version": 2, "reference": "tpu", "runs": [{"label": "cpu"}]}',
            "has no run 'tpu' (runs: cpu)",
        ),
        ('{"schema_version": 2, "runs": [{"label": "cpu", "error": "boom"}]}', "its run 'cpu' failed (boom)"),
        (
            '{"schema_version": 2, "runs": [{"label": "cpu", "records": []}]}',
            "its run 'cpu' has no 'loss' values",
        ),
    ],
)
def test_unusable_reference(
    content: str | None, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = tmp_path / "ref.json"
    if content is not None:
        ref.write_text(content)
    err = refused(capsys, "--out", str(tmp_path / "out"), "--reference", str(ref))
    assert f"--reference {ref}: {message}" in err
    assert "record one with: accel parity SCRIPT --backends NAME --record" in err


def test_reference_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, "--out", str(tmp_path / "out"), "--reference", str(tmp_path))
    assert "is a folder, not a parity.json file" in err
