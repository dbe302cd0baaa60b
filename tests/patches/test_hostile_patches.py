"""Hostile inputs to ``accel patches`` (issue 14): one clear error line, never a traceback or damage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from accel_abstraction.patching import PatchError, activate, active_finder, deactivate
from accel_abstraction.patching.apply import MANIFEST, write_overlay
from accel_abstraction.patching.cli import main as patches_main

from .test_tooling import _pristine_copy


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    return err


def _patches_copy(series, dest: Path) -> Path:  # type: ignore[no-untyped-def]
    """A writable copy of the ``patches`` directory holding the series."""
    version_dir = dest / "pytorch" / series.torch_version
    shutil.copytree(series.directory, version_dir)
    return dest


def test_non_utf8_patch_file_is_one_error_naming_it(
    series, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    patches = _patches_copy(series, tmp_path / "patches")
    victim = patches / "pytorch" / series.torch_version / series.patches[1].name
    victim.write_bytes(victim.read_bytes().replace(b"Problem:", b"Probl\xe8m:", 1))
    monkeypatch.setenv("ACCEL_PATCHES_DIR", str(patches))
    for command in (["check"], ["apply", "--target", str(tmp_path / "o")]):
        assert patches_main(command) == 2
        err = _error_line(capsys)
        assert f"{victim}:" in err and "not UTF-8 text (byte 0xe8" in err
    assert not (tmp_path / "o").exists()


def test_empty_series_is_refused(
    series, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    patches = _patches_copy(series, tmp_path / "patches")
    (patches / "pytorch" / series.torch_version / "series").write_text("# nothing yet\n\n")
    monkeypatch.setenv("ACCEL_PATCHES_DIR", str(patches))
    assert patches_main(["apply", "--target", str(tmp_path / "o")]) == 2
    assert "series lists no patches" in _error_line(capsys)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"format": 1}', "mode None, expected 'overlay' or 'in-place'"),
        ("[1, 2]", "a JSON list, not an object"),
        ('{"format": 1, "mode": "overlay", "torch_version": "2.13.0", "torch_root": "/", "files": {"../x.py": {}}}',
         "lacks stock_sha256"),
    ],
    ids=["no-mode", "list", "bad-files"],
)
def test_malformed_manifest_is_one_error(
    tmp_path: Path, content: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "overlay"
    target.mkdir()
    (target / MANIFEST).write_text(content)
    for command in (["apply", "--target", str(target)], ["revert", "--target", str(target)]):
        assert patches_main(command) == 2
        err = _error_line(capsys)
        assert "is not a manifest written by 'accel patches apply'" in err and problem in err
    assert (target / MANIFEST).read_text() == content  # nothing removed
    with pytest.raises(PatchError, match="not a manifest written"):
        activate(target)


def test_target_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "hostname"
    afile.write_text("keep\n")
    for command in ("apply", "revert"):
        assert patches_main([command, "--target", str(afile)]) == 2
        assert "is a file, not a directory" in _error_line(capsys)
    assert patches_main(["apply", "--target", str(afile / "sub")]) == 2
    assert "cannot create the --target directory" in _error_line(capsys)
    assert afile.read_text() == "keep\n"


def test_in_place_apply_twice_says_already_applied(
    series, torch_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _pristine_copy(series, torch_root, tmp_path / "site-packages")
    state = tmp_path / "state"
    args = ["apply", "--in-place", "--torch-root", str(site), "--target", str(state)]
    assert patches_main(args) == 0
    patched = {rel: (site / rel).read_bytes() for rel in series.files}
    capsys.readouterr()
    assert patches_main(args) == 0
    out = capsys.readouterr().out
    assert f"already applied in place to {site}" in out and "nothing to do" in out
    assert {rel: (site / rel).read_bytes() for rel in series.files} == patched
    # applied but recorded elsewhere: still "already applied", not "hunk does not apply"
    other = ["apply", "--in-place", "--torch-root", str(site), "--target", str(tmp_path / "other")]
    assert patches_main(other) == 0
    assert "already applied to the torch files under" in capsys.readouterr().out
    assert patches_main(["revert", "--torch-root", str(site), "--target", str(state)]) == 0


def test_tampered_overlay_file_is_not_loaded(series, torch_root: Path, tmp_path: Path) -> None:
    target = tmp_path / "overlay"
    write_overlay(series, torch_root, target)
    victim = target / series.files[0]
    victim.write_text(victim.read_text() + "\nimport os; os.system('echo pwned')\n")
    assert active_finder() is None
    try:
        with pytest.raises(PatchError) as info:
            activate(target)
    finally:
        deactivate()
    msg = str(info.value)
    assert f"{victim.resolve()} was changed after 'accel patches apply' wrote it" in msg
    assert "not loading it" in msg
    manifest = json.loads((target / MANIFEST).read_text())
    assert series.files[0] in manifest["files"]


def test_in_place_apply_never_overwrites_a_torch_file_edited_after_it_was_read(
    series, torch_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A torch file saved by someone between the apply's read and its rename keeps that edit."""
    from accel_abstraction.patching import apply as apply_module

    site = _pristine_copy(series, torch_root, tmp_path / "site-packages")
    state = tmp_path / "state"
    victim = site / sorted(series.files)[0]
    edit = b"# saved by someone else while the apply ran\n"
    original_write = apply_module._write

    def someone_saves_before_the_rename(path: Path, text: str, expect: bytes | None = None) -> None:
        if path == victim and expect is not None:  # the apply has read it and is about to replace it
            victim.write_bytes(expect + edit)
        original_write(path, text, expect=expect)

    monkeypatch.setattr(apply_module, "_write", someone_saves_before_the_rename)
    code = patches_main(["apply", "--in-place", "--torch-root", str(site), "--target", str(state)])
    assert code != 0
    err = _error_line(capsys)
    assert str(victim) in err and "changed after it was read" in err
    assert victim.read_bytes().endswith(edit)  # the edit is kept, not replaced by the patched copy
