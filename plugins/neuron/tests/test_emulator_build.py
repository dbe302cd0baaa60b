"""The C++ core's build cache: keyed by the sources' content, shared by checkouts, built once.

The first build says so in one line naming its cache folder; a folder is per torch build,
Python release and sources' content (not per checkout path: the sources are copied into it,
so build.ninja is the same for every checkout); two processes that find it unbuilt build it
once (a lock on the folder).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from accel_neuron.emulator import native

_BUILDING = "accel-neuron: building the neuron emulator's C++ core"


def _fake_compile(calls: list[float], started: threading.Event | None = None):
    def compile_(sources: list[Path], directory: Path) -> None:
        assert not (directory / "lock").exists()  # a killed build's lock file is cleared first
        assert [s.parent for s in sources] == [directory / "src"] * len(sources)
        assert [s.read_bytes() for s in sources] == [s.read_bytes() for s in native._SOURCES]
        calls.append(time.monotonic())
        if started is not None:
            started.set()
        time.sleep(0.3)
        (directory / f"{native._NAME}.so").write_bytes(b"built")

    return compile_


def test_two_processes_at_once_build_once_and_say_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    calls: list[float] = []
    started = threading.Event()
    monkeypatch.setattr(native, "_compile", _fake_compile(calls, started))
    (native._build_directory() / "lock").write_text("left by a killed build")
    paths: list[str] = []
    first = threading.Thread(target=lambda: paths.append(native._build()))
    first.start()
    assert started.wait(30)
    second = threading.Thread(target=lambda: paths.append(native._build()))  # while the first builds
    second.start()
    first.join(30)
    second.join(30)
    assert len(calls) == 1 and len(paths) == 2 and paths[0] == paths[1]
    err = capfd.readouterr().err
    assert err.count(_BUILDING) == 1 and str(native._build_directory()) in err
    native._build()  # and a later process: no build, no line
    assert len(calls) == 1 and _BUILDING not in capfd.readouterr().err


def test_the_folder_follows_the_sources_content_not_their_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "cache"))
    here = native._build_directory()
    copies = []
    for source in native._SOURCES:
        copies.append(tmp_path / "other_checkout" / source.name)
        copies[-1].parent.mkdir(exist_ok=True)
        shutil.copy(source, copies[-1])
    monkeypatch.setattr(native, "_SOURCES", copies)
    assert native._build_directory() == here  # same content elsewhere: same folder
    copies[-1].write_text(copies[-1].read_text() + "\n// changed\n")
    assert native._build_directory() != here  # other content: its own folder


@pytest.mark.slow
def test_a_second_checkout_of_the_same_sources_uses_the_built_library(tmp_path: Path) -> None:
    """A copy of the package elsewhere (a second clone of one commit) loads the existing build as is."""
    if not native.load():
        pytest.skip(f"the C++ core cannot be built here: {native.failure()}")
    directory = native._build_directory()
    library = directory / f"{native._NAME}.so"
    stamps = {p.name: p.stat().st_mtime_ns for p in (library, directory / "build.ninja") if p.exists()}
    package = Path(native.__file__).resolve().parents[1]
    shutil.copytree(package, tmp_path / "accel_neuron", ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import accel_neuron.emulator.native as n, sys\n"
        "assert n.__file__.startswith(sys.argv[1]), n.__file__\n"
        "print(n.load(), n._build_directory())\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", str(directory)]
    assert _BUILDING not in proc.stderr
    assert {name: (directory / name).stat().st_mtime_ns for name in stamps} == stamps
