"""Writes whole or not at all, inputs that cannot block, one writer at a time (issue 27)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from accel_abstraction.errors import AccelError
from accel_abstraction.safe_io import (
    InputFileError,
    LockTimeoutError,
    WriteError,
    atomic_write,
    dir_lock,
    read_regular,
    resolve_output,
)


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".accel-tmp"))


def test_atomic_write_replaces_whole_and_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "report.txt"
    path.write_text("old\n")
    path.chmod(0o640)
    atomic_write(path, "new\r\n")
    assert path.read_bytes() == b"new\r\n"  # no newline translation
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert _temps(tmp_path) == []


def test_atomic_write_new_file_gets_the_umask_mode_not_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "new.json", b"{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644


def test_atomic_write_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    atomic_write(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new"


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_full_disk_leaves_the_old_file_and_no_debris(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "report.txt"
    path.write_text("the previous report\n")

    def full(*_a: object, **_k: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, failing, full)
    with pytest.raises(WriteError) as info:
        atomic_write(path, "x" * 10000, what="--output")
    monkeypatch.undo()
    message = str(info.value)
    assert isinstance(info.value, AccelError) and "\n" not in message
    assert f"--output {path}" in message and "no space left" in message and "left unchanged" in message
    assert path.read_text() == "the previous report\n"
    assert _temps(tmp_path) == []


def test_write_into_a_missing_folder_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="not created"):
        atomic_write(tmp_path / "nope" / "x.json", "{}")
    with pytest.raises(WriteError, match="is a folder"):
        atomic_write(tmp_path, "{}")


def test_temporary_files_of_a_killed_writer_are_removed_by_the_next_write(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, timeout=60)
    stale = tmp_path / f".out.json.{dead.stdout.strip()}.abc123.accel-tmp"
    live = tmp_path / f".out.json.{os.getpid()}.def456.accel-tmp"  # a writer still running
    stale.write_text("half")
    live.write_text("half")
    atomic_write(tmp_path / "out.json", "{}")
    assert not stale.exists() and live.exists()


def _no_block(function, *args):  # type: ignore[no-untyped-def]
    """Call ``function`` in a daemon thread; fail (instead of hanging the run) if it blocks."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = function(*args)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), f"{function.__name__}{args} blocked"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]


def test_read_regular_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "ref.json"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match=r"the reference .*ref.json is a FIFO \(named pipe\), not a regular file"):
        _no_block(read_regular, fifo, "the reference")


def test_read_regular_refuses_devices_folders_and_oversized_files(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="character device"):
        _no_block(read_regular, "/dev/zero", "the manifest")
    with pytest.raises(InputFileError, match="a folder"):
        read_regular(tmp_path, "the manifest")
    (tmp_path / "big").write_bytes(b"x" * 100)
    with pytest.raises(InputFileError, match="100 bytes, more than the 10"):
        read_regular(tmp_path / "big", "the manifest", limit=10)
    assert read_regular(tmp_path / "big", "the manifest") == b"x" * 100


def test_resolve_output_is_fixed_at_call_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    resolved = resolve_output("rel.json")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert resolved == tmp_path / "rel.json"
    assert resolve_output("/abs.json") == Path("/abs.json")


def test_dir_lock_waits_for_another_process_then_gives_up(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(tmp_path)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockTimeoutError, match="another accel port --write has held"):
            with dir_lock(tmp_path, "accel port --write", wait=0.3):
                pass
        assert "waiting for another accel port --write" in capfd.readouterr().err
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with dir_lock(tmp_path, "accel port --write", wait=5):  # the lock died with its holder
        pass


def test_a_character_device_is_written_as_a_stream_not_replaced() -> None:
    atomic_write("/dev/null", "report\n")
    assert Path("/dev/null").is_char_device()
    with pytest.raises(WriteError, match="cannot write --output /dev/full: no space left on the device"):
        atomic_write("/dev/full", "report\n", what="--output")
