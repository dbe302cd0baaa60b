"""``accel patches`` interrupted, on a full disk, or fed a crafted manifest (issue 27):
the overlay or torch is whole afterwards, the next run cleans up, nothing outside is written."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest

from accel_abstraction.patching import PatchError, activate, deactivate
from accel_abstraction.patching.apply import MANIFEST, apply_in_place, revert, write_overlay
from accel_abstraction.patching.cli import main as patches_main
from accel_abstraction.patching.series import installed_torch_root, load_series, torch_version_at
from accel_abstraction.patching.staging import recover, sibling

from .tries import World, debris, overlay_problems, torch_state


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module")
def series():  # type: ignore[no-untyped-def]
    return load_series(torch_version_at(installed_torch_root()))


def _full_disk_at(monkeypatch: pytest.MonkeyPatch, call: int) -> None:
    """The ``call``-th ``os.fsync`` fails as on a full disk."""
    real, calls = os.fsync, [0]

    def fsync(fd: int) -> None:
        calls[0] += 1
        if calls[0] == call:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.parametrize("call", [1, 7, 27])  # file fsyncs: the first, a middle one, the manifest's
def test_full_disk_while_replacing_keeps_the_good_overlay(
    world: World, series, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: int
) -> None:
    target = tmp_path / "ov"
    write_overlay(series, world.torch_root, target)
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    _full_disk_at(monkeypatch, call)
    with pytest.raises(PatchError, match="no space left on the device"):
        write_overlay(series, world.torch_root, target)
    monkeypatch.undo()
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert debris(tmp_path) == []


def test_full_disk_on_a_first_apply_leaves_nothing(world: World, series, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _full_disk_at(monkeypatch, 3)
    with pytest.raises(PatchError):
        write_overlay(series, world.torch_root, tmp_path / "ov")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_replace_killed_between_its_renames_is_finished_by_any_next_run(world: World, series, tmp_path: Path) -> None:
    target = tmp_path / "ov"
    write_overlay(series, world.torch_root, target)
    os.replace(target, sibling(target, "old"))  # killed after moving the old aside, before the new was whole
    sibling(target, "new").mkdir()
    (sibling(target, "new") / "torch").mkdir()
    with pytest.raises(PatchError, match="interrupted 'accel patches' run left"):
        activate(target)
    assert recover(target) == [
        f"restored {target}: the run replacing it was interrupted before the new one was whole",
        f"removed {sibling(target, 'new')}, a half-written directory of an interrupted run",
    ]
    assert overlay_problems(world, target) == [] and debris(tmp_path) == []


def test_replace_killed_after_the_new_one_was_whole_keeps_the_new_one(world: World, series, tmp_path: Path) -> None:
    target = tmp_path / "ov"
    write_overlay(series, world.torch_root, target)
    shutil.copytree(target, sibling(target, "new"))
    (sibling(target, "new") / MANIFEST).write_text((target / MANIFEST).read_text().replace('"format"', '"new": 1, "format"'))
    os.replace(target, sibling(target, "old"))
    assert patches_main(["revert", "--target", str(target)]) == 0  # recovers, then reverts what is there
    assert not target.exists() and debris(tmp_path) == []


def test_in_place_killed_half_way_is_completed_by_apply_and_undone_by_revert(
    world: World, series, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = world.site(tmp_path / "site")
    state = tmp_path / "state"
    apply_in_place(series, site, state)
    first = series.files[0]
    shutil.copyfile(world.torch_root / first, site / first)  # as if killed before patching the first file
    assert torch_state(world, site) == "mixed"
    args = ["--torch-root", str(site), "--target", str(state)]
    assert patches_main(["apply", "--in-place", *args]) == 0
    assert "completed the interrupted in-place apply" in capsys.readouterr().err
    assert torch_state(world, site) == "patched"
    shutil.copyfile(world.torch_root / first, site / first)  # killed half-way through a revert
    assert patches_main(["revert", *args]) == 0
    assert torch_state(world, site) == "stock" and not state.exists() and debris(tmp_path) == []


def _crafted_in_place(world: World, series, tmp_path: Path) -> tuple[Path, Path, Path]:  # type: ignore[no-untyped-def]
    site = world.site(tmp_path / "site")
    state = tmp_path / "state"
    apply_in_place(series, site, state)
    outside = tmp_path / "outside"
    shutil.copytree(site, outside)  # looks like a torch tree of the same version
    return site, state, outside


def test_revert_never_restores_into_a_root_it_was_not_asked_for(world: World, series, tmp_path: Path) -> None:
    site, state, outside = _crafted_in_place(world, series, tmp_path)
    manifest = json.loads((state / MANIFEST).read_text())
    manifest["torch_root"] = str(outside)
    (state / MANIFEST).write_text(json.dumps(manifest))
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    with pytest.raises(PatchError, match=f"the state records torch under {outside}, not {site}"):
        revert(state, site)
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
    assert torch_state(world, site) == "patched"  # nothing restored: the user decides


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("torch/../../outside/x.py", "unsafe file path"),
        ("json/__init__.py", r"every patched file is a torch/\*\*\.py module"),
        ("torch//amp/x.py", "unsafe file path"),
    ],
)
def test_manifest_naming_a_file_outside_torch_is_refused(
    world: World, series, tmp_path: Path, path: str, problem: str
) -> None:
    target = tmp_path / "ov"
    write_overlay(series, world.torch_root, target)
    manifest = json.loads((target / MANIFEST).read_text())
    manifest["files"][path] = next(iter(manifest["files"].values()))
    (target / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(PatchError, match=problem):
        activate(target)
    deactivate()
    with pytest.raises(PatchError, match=problem):
        revert(target)


def test_revert_of_an_overlay_keeps_files_apply_did_not_write(
    world: World, series, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "ov"
    write_overlay(series, world.torch_root, target)
    (target / "notes.txt").write_text("mine")
    edited = target / series.files[0]
    edited.write_text(edited.read_text() + "# my change\n")
    with pytest.raises(PatchError, match="holds files 'accel patches apply' did not write"):
        write_overlay(series, world.torch_root, target)  # replacing would lose them
    assert patches_main(["revert", "--target", str(target)]) == 0
    out = capsys.readouterr()
    assert "kept the folder" in out.out and "notes.txt" in out.err
    assert (target / "notes.txt").read_text() == "mine" and edited.read_text().endswith("# my change\n")
    left = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert left == sorted(["notes.txt", series.files[0]])


def test_journal_name_that_is_a_symlink_is_refused_not_followed(world: World, series, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    target = tmp_path / "ov"
    sibling(target, "trash").symlink_to(victim)
    with pytest.raises(PatchError, match="is not a directory written by 'accel patches'"):
        write_overlay(series, world.torch_root, target)
    assert (victim / "keep.txt").read_text() == "keep"


def test_revert_of_a_target_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(PatchError, match="nothing at"):
        revert(tmp_path / "missing" / "ov")
    assert list(tmp_path.iterdir()) == []
