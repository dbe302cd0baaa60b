"""The series and the tooling: it applies cleanly, the pure-Python applier agrees with git,
``accel patches`` commands, in-place apply/revert, version mismatch, overlay activation."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from accel_abstraction.patching import HunkMismatchError, PatchError, TorchVersionMismatchError
from accel_abstraction.patching.apply import MANIFEST
from accel_abstraction.patching.check import check_series, patched_texts, wheel_copy
from accel_abstraction.patching.cli import main as patches_main
from accel_abstraction.patching.series import load_series
from accel_abstraction.patching.unidiff import apply_file_diff, parse_diff


def _pristine_copy(series, torch_root: Path, dest: Path, version: str | None = None) -> Path:
    """A minimal torch tree: the files the series touches and version.py."""
    for rel in series.files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(torch_root / rel, dest / rel)
    version_py = (torch_root / "torch" / "version.py").read_text()
    if version is not None:
        version_py = re.sub(r"^__version__ = .*$", f"__version__ = '{version}'", version_py, flags=re.M)
    (dest / "torch" / "version.py").write_text(version_py)
    return dest


# ----------------------------------------------------------------------------- the series


def test_series_lists_every_patch_file_in_order(series) -> None:
    on_disk = sorted(p.name for p in series.directory.glob("*.patch"))
    assert [p.name for p in series.all_patches] == on_disk
    assert len(series.patches) >= 8
    # A patch keeps its number in every release's series (the patch tests know it by it); a series
    # that no longer carries one (fixed upstream, see its series file) has a gap there.
    numbers = [int(p.name[:4]) for p in series.all_patches]
    assert numbers == sorted(set(numbers))
    for number, patch in zip(numbers, series.all_patches, strict=True):
        text = patch.path.read_text()
        total = int(re.search(r"Subject: \[PATCH \d+/(\d+)\]", text).group(1))
        assert total >= len(series.all_patches), patch.name
        for header in ("From ", "From: ", "Date: ", f"Subject: [PATCH {number:02d}/{total}]"):
            assert header in text, (patch.name, header)
        for section in ("Problem:", "Who it hurts:", "Fix:", "Test plan:"):
            assert section in text, (patch.name, section)
    assert all(f.startswith("torch/") and f.endswith(".py") for p in series.patches for f in p.files)
    for patch in series.source_patches:  # C++: the commit message says why it is not built here
        assert "Not built here:" in patch.path.read_text(), patch.name
        assert not any(f.endswith(".py") for f in patch.files)
    for patch in series.test_patches:  # PyTorch's own test files: applied to a test tree, never to torch
        assert all(f.startswith("test/") for f in patch.files), patch.name


def test_every_patch_applies_cleanly_to_the_installed_torch(series, torch_root: Path) -> None:
    results = check_series(series, torch_root)
    state = {"wheel": "applies", "source": "source", "tests": "tests"}
    expected = [(p.name, state[p.kind]) for p in series.all_patches]
    assert [(r.patch.name, r.state) for r in results] == expected


def test_git_apply_accepts_the_series_and_agrees_with_the_python_applier(
    series, torch_root: Path, tmp_path: Path
) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed")
    tree = _pristine_copy(series, torch_root, tmp_path / "site-packages")
    for patch in series.patches:
        for args in (["--check"], []):
            done = subprocess.run(
                [git, "apply", *args, str(patch.path)],
                cwd=tree,
                capture_output=True,
                text=True,
                timeout=60,
                # never let git find an enclosing repository: apply relative to the tree, like patch -p1
                env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)},
            )
            assert done.returncode == 0, (patch.name, done.stderr)
    for rel, (_, patched) in patched_texts(series, torch_root).items():
        assert (tree / rel).read_text() == patched, rel


# ----------------------------------------------------------------------------- the applier


ORIGINAL = "".join(f"line {i}\n" for i in range(1, 21))
DIFF = textwrap.dedent(
    """\
    --- a/torch/x.py
    +++ b/torch/x.py
    @@ -9,3 +9,3 @@
     line 9
    -line 10
    +line ten
     line 11
    """
)


def test_applier_finds_a_hunk_at_an_offset_and_reverses_it() -> None:
    (diff,) = parse_diff(DIFF)
    shifted = "extra\nextra\n" + ORIGINAL
    patched = apply_file_diff(shifted, diff)
    assert patched == shifted.replace("line 10\n", "line ten\n")
    assert apply_file_diff(patched, diff, reverse=True) == shifted


def test_applier_refuses_mismatched_context_without_fuzz() -> None:
    (diff,) = parse_diff(DIFF)
    with pytest.raises(HunkMismatchError, match=r"hunk 1 .* does not apply to torch/x.py"):
        apply_file_diff(ORIGINAL.replace("line 11\n", "line eleven\n"), diff)


def test_applier_handles_a_missing_newline_at_end_of_file() -> None:
    diff_text = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    (diff,) = parse_diff(diff_text)
    assert apply_file_diff("a\nb", diff) == "a\nc"


def test_parser_refuses_new_files_and_unsafe_paths() -> None:
    with pytest.raises(PatchError, match="not supported"):
        parse_diff("--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x\n")
    with pytest.raises(PatchError, match="unsafe path"):
        parse_diff("--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-x\n+y\n")


# ----------------------------------------------------------------------------- the CLI


def test_cli_list_and_check(capsys: pytest.CaptureFixture[str], series) -> None:
    assert patches_main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(p.name in out and p.subject in out for p in series.all_patches)
    assert out.count("[C++, not built here]") == len(series.source_patches)
    assert patches_main(["check"]) == 0
    out = capsys.readouterr().out
    assert f"{len(series.patches)} apply, 0 already applied, 0 fail" in out
    if series.source_patches:
        assert f"; {len(series.source_patches)} C++ patches not built here" in out
        assert out.count("not built here: it changes C++") == len(series.source_patches)


def test_check_reports_the_patch_that_no_longer_applies(
    series, torch_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _pristine_copy(series, torch_root, tmp_path / "site-packages")
    scaler = site / "torch/amp/grad_scaler.py"
    scaler.write_text(scaler.read_text().replace('device: str = "cuda",', 'device: str = "cpu",'))
    assert patches_main(["check", "--torch-root", str(site)]) == 1
    out = capsys.readouterr().out
    first = series.patches[0].name
    assert f"fails    {first}" in out and "does not apply to torch/amp/grad_scaler.py" in out
    assert f"{len(series.patches) - 1} apply, 0 already applied, 1 fail" in out
    assert patches_main(["apply", "--torch-root", str(site), "--target", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()


def test_check_verifies_cpp_patches_against_the_wheels_headers(
    series, torch_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = next((wheel_copy(f) for p in series.source_patches for f in p.files if wheel_copy(f)), None)
    if header is None or not (torch_root / header).is_file():
        pytest.skip("no C++ patch changes a file the wheel ships")
    site = _pristine_copy(series, torch_root, tmp_path / "site-packages")
    (site / header).parent.mkdir(parents=True)
    shutil.copyfile(torch_root / header, site / header)
    assert patches_main(["check", "--torch-root", str(site)]) == 0
    assert f"context matches the installed {header}" in capsys.readouterr().out
    (site / header).write_text((site / header).read_text().replace("BackendComponent::MTIABit}", "X}"))
    assert patches_main(["check", "--torch-root", str(site)]) == 1
    out = capsys.readouterr().out
    assert f"checked against the wheel's copy {header}" in out and "1 fail" in out


def test_a_patch_mixing_python_and_cpp_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "pytorch" / "2.13.0"
    directory.mkdir(parents=True)
    hunk = "@@ -1 +1 @@\n-x\n+y\n"
    (directory / "0001-mixed.patch").write_text(
        f"--- a/torch/x.py\n+++ b/torch/x.py\n{hunk}--- a/c10/x.h\n+++ b/c10/x.h\n{hunk}"
    )
    (directory / "series").write_text("0001-mixed.patch\n")
    with pytest.raises(PatchError, match="split it into two patches"):
        load_series("2.13.0", tmp_path)


def test_add_parser_follows_the_accel_cli_contract(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from accel_abstraction.patching.cli import add_parser

    parser = argparse.ArgumentParser(prog="accel")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["patches", "check"])
    assert args.func(args) == 0
    assert "0 fail" in capsys.readouterr().out


def test_cli_overlay_apply_and_revert(tmp_path: Path, series, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "overlay"
    assert patches_main(["apply", "--target", str(target)]) == 0
    manifest = json.loads((target / MANIFEST).read_text())
    assert manifest["mode"] == "overlay"
    assert sorted(manifest["files"]) == sorted(series.files)
    assert all((target / rel).is_file() for rel in series.files)
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*.py")) == sorted(series.files)
    assert patches_main(["apply", "--target", str(target)]) == 0  # re-apply replaces its own overlay
    assert patches_main(["revert", "--target", str(target)]) == 0
    assert not target.exists()


def test_cli_never_overwrites_a_directory_it_did_not_make(tmp_path: Path, capsys) -> None:
    (tmp_path / "precious.txt").write_text("keep")
    assert patches_main(["apply", "--target", str(tmp_path)]) == 2
    assert "holds no manifest.json" in capsys.readouterr().err
    assert patches_main(["revert", "--target", str(tmp_path)]) == 2
    assert (tmp_path / "precious.txt").read_text() == "keep"


def test_in_place_apply_backs_up_and_revert_restores(series, torch_root: Path, tmp_path: Path) -> None:
    site = _pristine_copy(series, torch_root, tmp_path / "site-packages")
    before = {rel: (site / rel).read_bytes() for rel in series.files}
    state = tmp_path / "state"
    assert patches_main(["apply", "--in-place", "--torch-root", str(site), "--target", str(state)]) == 0
    expected = patched_texts(series, torch_root)
    assert all((site / rel).read_text() == expected[rel][1] for rel in series.files)
    assert all((state / "backup" / rel).read_bytes() == before[rel] for rel in series.files)
    assert {r.state for r in check_series(series, site) if r.patch.kind == "wheel"} == {"applied"}
    assert patches_main(["apply", "--torch-root", str(site), "--target", str(state)]) == 2  # revert first
    assert patches_main(["revert", "--torch-root", str(site), "--target", str(state)]) == 0
    assert {rel: (site / rel).read_bytes() for rel in series.files} == before
    assert not state.exists()


def test_version_mismatch_names_both_versions(
    series, torch_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _pristine_copy(series, torch_root, tmp_path / "site-packages", version="2.99.0")
    assert patches_main(["check", "--torch-root", str(site)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "torch 2.99.0 is installed" in err and "torch 2.13.0" in err and "2.15.0" in err
    with pytest.raises(TorchVersionMismatchError):
        load_series("2.99.0")


def test_check_names_the_series_it_chose(series, capsys: pytest.CaptureFixture[str]) -> None:
    assert patches_main(["check"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"series {series.directory} (for torch {series.torch_version}, chosen by the torch at")


def _moved_release(series, torch_root: Path, site: Path) -> Path:
    """A copy of the installed files as a made-up release 2.99.0 whose lines all moved down."""
    _pristine_copy(series, torch_root, site, version="2.99.0")
    for rel in series.files:
        (site / rel).write_text("# 2.99.0 moved everything\n" * 7 + (site / rel).read_text())
    return site


def _series_dir_copy(series, tmp_path: Path) -> Path:
    patches_dir = tmp_path / "patches"
    shutil.copytree(series.directory, patches_dir / "pytorch" / series.torch_version)
    return patches_dir


@pytest.mark.skipif(shutil.which("git") is None, reason="accel patches rebase writes its diffs with git")
def test_rebase_makes_a_series_that_applies_to_the_new_release(series, torch_root: Path, tmp_path: Path, capsys) -> None:
    site = _moved_release(series, torch_root, tmp_path / "site-packages")
    patches_dir = _series_dir_copy(series, tmp_path)
    args = ["--torch-root", str(site), "--patches-dir", str(patches_dir)]
    assert patches_main(["rebase", "--from", series.torch_version, *args]) == 0
    out = capsys.readouterr().out
    assert "rebased onto torch 2.99.0" in out and "PORT" not in out
    rebased = load_series("2.99.0", patches_dir)
    assert [p.name for p in rebased.all_patches] == [p.name for p in series.all_patches]
    assert [p.subject for p in rebased.all_patches] == [p.subject for p in series.all_patches]
    for old, new in zip(series.patches, rebased.patches, strict=True):
        assert [h.old_start for d in new.diffs for h in d.hunks] != [h.old_start for d in old.diffs for h in d.hunks]
    assert patches_main(["check", *args]) == 0
    assert "0 fail" in capsys.readouterr().out
    moved = patched_texts(rebased, site)
    original = patched_texts(series, torch_root)
    assert {rel: texts[1] for rel, texts in moved.items()} == {
        rel: "# 2.99.0 moved everything\n" * 7 + texts[1] for rel, texts in original.items()
    }
    assert patches_main(["rebase", "--from", series.torch_version, *args]) == 2  # exists: --replace
    assert "pass --replace" in capsys.readouterr().err
    assert patches_main(["rebase", "--from", series.torch_version, "--replace", *args]) == 0
    # what the replaced series decided stays: a patch it no longer carries stays out, with its note
    new_dir = patches_dir / "pytorch" / "2.99.0"
    gone = rebased.patches[-1]
    (new_dir / gone.name).unlink()
    note = f"# {gone.name[:4]} is not carried: fixed upstream in 2.99\n# (the test checks stock torch)."
    listing = (new_dir / "series").read_text().replace(gone.name, note)
    (new_dir / "series").write_text(listing)
    capsys.readouterr()
    assert patches_main(["rebase", "--from", series.torch_version, "--replace", *args]) == 0
    assert f"DROPPED  {gone.name}" in capsys.readouterr().out
    assert (new_dir / "series").read_text() == listing and not (new_dir / gone.name).exists()
    assert patches_main(["check", *args]) == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="accel patches rebase writes its diffs with git")
def test_rebase_copies_a_patch_whose_lines_are_gone_and_says_so(series, torch_root: Path, tmp_path: Path, capsys) -> None:
    site = _moved_release(series, torch_root, tmp_path / "site-packages")
    first = series.patches[0]
    target = site / first.diffs[0].path
    removed = next(t for tag, t in first.diffs[0].hunks[0].lines if tag == "-")
    target.write_text(target.read_text().replace(removed, "# rewritten upstream\n", 1))
    patches_dir = _series_dir_copy(series, tmp_path)
    code = patches_main(["rebase", "--from", series.torch_version, "--torch-root", str(site), "--patches-dir", str(patches_dir)])
    assert code == 1
    out = capsys.readouterr().out
    assert f"PORT     {first.name}  copied unchanged, a person must port it" in out
    assert (patches_dir / "pytorch" / "2.99.0" / first.name).read_bytes() == first.path.read_bytes()


# ----------------------------------------------------------------------------- activation


ACTIVATION_PROBE = textwrap.dedent(
    """\
    import json, sys
    from accel_abstraction.patching import PatchError, activate, deactivate
    finder = activate(sys.argv[1])
    assert activate(sys.argv[1]) is finder  # idempotent
    import torch
    import torch.amp.grad_scaler, torch.amp.autocast_mode, torch.utils.checkpoint
    report = {
        "patched": torch.amp.grad_scaler.__file__,
        "checkpoint": torch.utils.checkpoint.__file__,
        "untouched": torch.amp.autocast_mode.__file__,
        "torch": torch.__file__,
    }
    deactivate()
    try:
        activate(sys.argv[1])
    except PatchError as exc:
        report["late"] = str(exc)
    print(json.dumps(report))
    """
)


@pytest.mark.slow
def test_activate_serves_exactly_the_patched_modules_and_must_come_first(
    overlay: Path, torch_root: Path, tmp_path: Path
) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(ACTIVATION_PROBE)
    done = subprocess.run(
        [sys.executable, str(probe), str(overlay)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    resolved = overlay.resolve()
    assert report["patched"] == str(resolved / "torch/amp/grad_scaler.py")
    assert report["checkpoint"] == str(resolved / "torch/utils/checkpoint.py")
    assert report["untouched"] == str(torch_root / "torch/amp/autocast_mode.py")
    assert report["torch"] == str(torch_root / "torch/__init__.py")
    assert "before 'import torch'" in report["late"]


def test_readme_table_has_a_row_per_patch(series) -> None:
    readme = (series.directory.parents[1] / "README.md").read_text()
    for patch in series.all_patches:
        number = patch.name.split("-", 1)[0]
        assert f"| {number} " in readme, f"patches/README.md has no row for {patch.name}"
        assert all(f"`{f}`" in readme for f in patch.files)
