"""Inputs that used to hang, escape their place or end in a traceback (issue 27), one class per block."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accel_abstraction.errors import AccelError, BackendUnavailableError, ConfigError
from accel_abstraction.parity import pattern as pattern_module
from accel_abstraction.parity.pattern import MetricPattern
from accel_abstraction.parity.reference import ReferenceFileError, load_reference
from accel_abstraction.porting.__main__ import main as porting_main

from .tries import PORT_FILES, _reference_shapes, port_tree

TIMEOUT_S = 120
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _clean(clean_accel_env: None) -> None:
    """No ACCEL_* variable of the caller leaks in."""


def _python(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env={**full, **(env or {})}, capture_output=True, text=True, timeout=TIMEOUT_S
    )


# ----------------------------------------------------------------------------- recordings


@pytest.mark.parametrize("shape", sorted(_reference_shapes()))
def test_malformed_reference_is_one_error_naming_the_file(tmp_path: Path, shape: str) -> None:
    ref = tmp_path / "ref.json"
    ref.write_bytes(_reference_shapes()[shape].encode("utf-8", "surrogateescape"))
    with pytest.raises(ReferenceFileError) as info:
        load_reference(ref)
    message = str(info.value)
    assert message.startswith(f"--reference {ref}") and "\n" not in message, message


def test_fifo_reference_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "ref.json"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(ReferenceFileError, match=r"is a FIFO \(named pipe\), not a regular file"):
        load_reference(fifo)
    assert time.monotonic() - start < 5


# ----------------------------------------------------------------------------- user regexes


def test_catastrophic_metric_pattern_is_stopped_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pattern_module, "MATCH_SECONDS", 0.3)
    pattern = MetricPattern.parse(r"iter (?P<step>\d+): loss (?P<loss>(a+)+)$")
    start = time.monotonic()
    with pytest.raises(ConfigError, match="backtracks catastrophically"):
        pattern.records("iter 1: loss " + "a" * 40 + "!")
    assert time.monotonic() - start < 5


def test_a_pattern_that_matches_quickly_is_unaffected_by_the_limit() -> None:
    pattern = MetricPattern.parse(r"iter (?P<step>\d+): loss (?P<loss>\S+)")
    lines = "\n".join(f"iter {i}: loss {i / 10}" for i in range(2000))
    records = pattern.records(lines)
    assert len(records) == 2000 and records[-1] == {"step": 1999, "loss": 199.9}


# ----------------------------------------------------------------------------- child processes


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (killed, waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_sigterm_to_parity_ends_the_script_and_its_children(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(tmp_path / 'pids')!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(120)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    parity = subprocess.Popen(
        [sys.executable, "-m", "accel_abstraction", "parity", str(script), "--backends", "cpu,cpu", "--no-plot",
         "--no-progress", "--out", str(tmp_path / "out")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not (tmp_path / "pids").is_file() or len((tmp_path / "pids").read_text().split()) < 2:
            assert time.monotonic() < deadline and parity.poll() is None, "the script never started"
            time.sleep(0.1)
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        parity.send_signal(signal.SIGTERM)
        parity.communicate(timeout=TIMEOUT_S)
        assert parity.returncode == 128 + signal.SIGTERM
        deadline = time.monotonic() + 30  # killed processes are reaped by init, in its own time
        while [pid for pid in pids if _running(pid)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in pids if _running(pid)] == [], "left running"
    finally:
        if parity.poll() is None:
            parity.kill()
            parity.communicate(timeout=TIMEOUT_S)


# ----------------------------------------------------------------------------- porting


def test_scan_jobs_is_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port_tree(tmp_path)
    with pytest.raises(SystemExit) as info:
        porting_main(["scan", str(tmp_path), "-j", "100000"])
    assert info.value.code == 2
    assert "100000 worker processes: give at most 256" in capsys.readouterr().err


def test_port_write_skips_a_symlink_leaving_the_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = port_tree(tmp_path / "src")
    outside = port_tree(tmp_path / "outside")
    (tree / "link.py").symlink_to(outside / "m0.py")
    assert porting_main(["port", "--write", str(tree)]) == 1
    err = capsys.readouterr().err
    assert f"link.py: not written: a symlink to {outside / 'm0.py'}, outside the tree; pass --follow-links" in err
    assert (outside / "m0.py").read_text() == PORT_FILES["m0.py"]
    assert "torch.cuda" not in (tree / "m1.py").read_text()  # the rest is ported
    assert porting_main(["port", "--write", "--follow-links", str(tree)]) == 0
    assert "torch.cuda" not in (outside / "m0.py").read_text() and (tree / "link.py").is_symlink()


def test_port_write_keeps_hard_links_or_skips_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = port_tree(tmp_path / "src")
    os.link(tree / "m1.py", tmp_path / "alias.py")
    assert porting_main(["port", "--write", str(tree)]) == 1
    assert "m1.py: not written: one of 2 hard links" in capsys.readouterr().err
    assert (tmp_path / "alias.py").read_text() == PORT_FILES["m1.py"]
    assert porting_main(["port", "--write", "--follow-links", str(tree)]) == 0
    assert os.path.samefile(tree / "m1.py", tmp_path / "alias.py")  # the link holds
    assert "torch.cuda" not in (tmp_path / "alias.py").read_text()


def test_two_port_writes_on_one_tree_take_turns(tmp_path: Path) -> None:
    tree = port_tree(tmp_path / "src")
    for i in range(30):
        (tree / f"n{i}.py").write_text(PORT_FILES["m0.py"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    procs = [
        subprocess.Popen([sys.executable, "-m", "accel_abstraction", "port", "--write", str(tree)], cwd=tmp_path,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    results = [p.communicate(timeout=TIMEOUT_S) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert not [p.name for p in tree.iterdir() if "torch.cuda" in p.read_text()]
    assert sorted(p.name for p in tree.iterdir()) == sorted([*PORT_FILES, *(f"n{i}.py" for i in range(30))])


# ----------------------------------------------------------------------------- accel run


def test_run_output_is_relative_to_where_accel_run_started(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "train.py").write_text("import os\nos.chdir('elsewhere')\n")
    done = _python(["-m", "accel_abstraction", "run", "-o", "report.json", "train.py"], tmp_path, {"ACCEL_BACKEND": "cpu"})
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "report.json").read_text())["backend"] == "cpu"
    assert not (tmp_path / "elsewhere" / "report.json").exists()


def test_run_refuses_a_fifo_target(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "train.py")
    done = _python(["-m", "accel_abstraction", "run", "train.py"], tmp_path, {"ACCEL_BACKEND": "cpu"})
    assert done.returncode == 2 and "is not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_a_thread_outliving_the_script_keeps_the_redirect(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import threading, time, torch\n"
        "def late():\n"
        "    time.sleep(0.5)\n"
        "    x = torch.zeros(2).cuda()\n"
        "    open('device.txt', 'w').write(x.device.type)\n"
        "threading.Thread(target=late).start()\n"
    )
    done = _python(["-m", "accel_abstraction", "run", "--report", "none", "train.py"], tmp_path, {"ACCEL_BACKEND": "cpu"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (tmp_path / "device.txt").read_text() == "cpu"


# ----------------------------------------------------------------------------- environment


def test_plugins_allow_list_of_only_commas_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    import accel_abstraction.plugins as plugins

    monkeypatch.setenv("ACCEL_PLUGINS", ",")
    plugins.reset()
    try:
        with pytest.raises(ConfigError, match=r"ACCEL_PLUGINS=',' names no plugin"):
            plugins.get_host()
    finally:
        monkeypatch.delenv("ACCEL_PLUGINS")
        plugins.reset()


def test_autoload_off_alone_names_the_variable(tmp_path: Path) -> None:
    code = "import accel_abstraction as a\ntry:\n a.device()\nexcept a.AccelError as e:\n print(type(e).__name__, e)\n"
    done = _python(["-c", code], tmp_path, {"ACCEL_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert done.stdout.startswith(BackendUnavailableError.__name__), done.stdout + done.stderr
    assert "ACCEL_DISABLE_PLUGIN_AUTOLOAD=1 is set and ACCEL_PLUGINS names none" in done.stdout


@pytest.mark.parametrize("value", ["inf", "1e300", "nan", "-1"])
def test_dist_timeout_out_of_range_is_a_config_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from accel_abstraction.settings import DistSettings

    monkeypatch.setenv("ACCEL_DIST_TIMEOUT", value)
    with pytest.raises(AccelError, match="ACCEL_DIST_TIMEOUT"):
        DistSettings.load()


# ----------------------------------------------------------------------------- threads


def test_set_device_from_a_thread_while_another_is_inside_using(tmp_path: Path) -> None:
    pytest.importorskip("accel_neuron", reason="needs a backend with two devices: the neuron emulator")
    script = (
        "import threading, time, accel_abstraction as accel\n"
        "accel.use('neuron')\n"
        "errors, inside, stop = [], threading.Event(), threading.Event()\n"
        "def blocks():\n"
        "    while not stop.is_set():\n"
        "        with accel.using('cpu'):\n"
        "            inside.set()\n"
        "            time.sleep(0.002)\n"
        "        time.sleep(0.0005)\n"
        "def setter():\n"
        "    inside.wait(30)\n"
        "    for _ in range(200):\n"
        "        try:\n"
        "            accel.set_device(1)\n"
        "        except Exception as e:\n"
        "            errors.append(repr(e))\n"
        "            return\n"
        "    errors.append(accel.current_device())  # the current device is per thread, as on CUDA\n"
        "a, b = threading.Thread(target=blocks), threading.Thread(target=setter)\n"
        "a.start(); b.start(); b.join(); stop.set(); a.join()\n"
        "print(errors)\n"
    )
    done = _python(["-c", script], tmp_path, {"ACCEL_NEURON_EMULATE": "1", "ACCEL_NEURON_EMULATE_DEVICES": "2"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[1]"


# ----------------------------------------------------------------------------- distributed


def test_rank_whose_master_port_is_not_a_store_gives_up(tmp_path: Path) -> None:
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)  # accepts connections (the kernel does) and never answers
    try:
        code = (
            "import accel_abstraction as accel\n"
            "import accel_abstraction.distributed.init as init\n"
            "init.RENDEZVOUS_GRACE_S = 1.0\n"
            "try:\n"
            "    accel.init_distributed()\n"
            "except accel.AccelError as e:\n"
            "    print(type(e).__name__, e)\n"
        )
        env = {
            "RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(server.getsockname()[1]), "ACCEL_DIST_TIMEOUT": "1", "ACCEL_BACKEND": "cpu",
        }  # fmt: skip
        done = _python(["-c", code], tmp_path, env)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("DistributedError rank 1 of 2 could not join the process group")
    assert "not rank 0's torch.distributed store" in done.stdout and "ACCEL_DIST_TIMEOUT" in done.stdout


# ----------------------------------------------------------------------------- patch series


@pytest.mark.parametrize(("line", "shown"), [("x" * 100000, "'" + "x" * 40 + "..."), ("../0001.patch", "'../0001.patch'")])
def test_series_line_that_is_not_a_file_name_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], line: str, shown: str
) -> None:
    import shutil

    from accel_abstraction.patching.cli import main as patches_main
    from accel_abstraction.patching.series import installed_torch_root, load_series, torch_version_at

    series = load_series(torch_version_at(installed_torch_root()))
    version = tmp_path / "patches" / "pytorch" / series.torch_version
    shutil.copytree(series.directory, version)
    (version / "series").write_text(f"# first a comment\n{line}\n")
    monkeypatch.setenv("ACCEL_PATCHES_DIR", str(tmp_path / "patches"))
    assert patches_main(["check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"accel: error: {version / 'series'}:2: {shown}") and "\n" not in err
    assert "is not a patch file name" in err


def test_report_folders_of_killed_runs_are_removed_by_the_next_run_and_only_those(tmp_path: Path) -> None:
    import json

    from accel_abstraction.redirect.children import MARKER

    temp = tmp_path / "tmp"
    temp.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, timeout=60)
    pid = int(dead.stdout)

    def folder(name: str, owner: dict[str, int] | None) -> Path:
        path = temp / name
        path.mkdir()
        (path / "1234.json").write_text("[]")
        if owner is not None:
            (path / MARKER).write_text(json.dumps(owner))
        return path

    uid = os.getuid()
    stale = folder(f"accel-run-{pid}-abc", {"uid": uid, "pid": pid})
    # not made by accel run (no marker), a marker naming another process or user, a run still going
    kept = [
        folder(f"accel-run-{pid}-nomarker", None),
        folder(f"accel-run-{pid}-otherpid", {"uid": uid, "pid": pid + 1}),
        folder(f"accel-run-{pid}-otheruser", {"uid": uid + 1, "pid": pid}),
        folder(f"accel-run-{os.getpid()}-live", {"uid": uid, "pid": os.getpid()}),
    ]
    (temp / f"accel-run-{pid}-file").write_text("a user's file")
    (tmp_path / "train.py").write_text("")
    env = {"ACCEL_BACKEND": "cpu", "TMPDIR": str(temp)}
    done = _python(["-m", "accel_abstraction", "run", "--report", "none", "train.py"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert not stale.exists()
    assert all((path / "1234.json").is_file() for path in kept)
    assert (temp / f"accel-run-{pid}-file").read_text() == "a user's file"
    assert sorted(p.name for p in temp.iterdir()) == sorted([p.name for p in kept] + [f"accel-run-{pid}-file"])
