"""`accel run` keeps the redirect until the interpreter has finished (issue 38): CUDA calls in
``atexit`` handlers, ``weakref.finalize`` callbacks and daemon threads are redirected like the
script's own, and one that fails there makes the exit status non-zero (one line names it).

Each case is ``accel run`` as its own process, as a user starts it: only there does the
interpreter's end follow the script.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _accel_run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "train.py").write_text("import atexit, threading, time, weakref\nimport torch\n" + body)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    env["ACCEL_BACKEND"] = "cpu"
    return subprocess.run(
        [sys.executable, "-m", "accel_abstraction", "run", "--report", "none", "train.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("body", "printed"),
    [
        ("atexit.register(lambda: print('atexit', torch.zeros(1).cuda().device, torch.cuda.is_available()))\n", "atexit cpu True"),
        (
            "class Box:\n    pass\nbox = Box()\n"
            "weakref.finalize(box, lambda: print('finalize', torch.zeros(1).cuda().device))\n",
            "finalize cpu",
        ),
        (
            "def spin():\n    while True:\n        torch.zeros(1).cuda()\n        time.sleep(0.001)\n"
            "threading.Thread(target=spin, daemon=True).start()\ntime.sleep(0.2)\nprint('daemon running')\n",
            "daemon running",
        ),
    ],
    ids=["atexit", "weakref.finalize", "daemon-thread"],
)
def test_cuda_after_the_last_line_is_still_redirected(tmp_path: Path, body: str, printed: str) -> None:
    got = _accel_run(tmp_path, body)
    assert got.returncode == 0, got.stderr
    assert NOT_COMPILED not in got.stderr and "Traceback" not in got.stderr
    assert printed in got.stdout


def test_an_exit_handler_that_fails_makes_the_exit_status_non_zero(tmp_path: Path) -> None:
    got = _accel_run(
        tmp_path, "def bad():\n    torch.zeros(1).cuda()\n    raise RuntimeError('late failure')\natexit.register(bad)\nprint('last line')\n"
    )
    assert "last line" in got.stdout
    assert got.returncode == 1, got.stderr
    assert NOT_COMPILED not in got.stderr
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in got.stderr, got.stderr
    assert lines[0].startswith("accel run: exit handler 'bad' raised RuntimeError at ") and "train.py:5: late failure" in lines[0]


def test_a_thread_that_fails_makes_the_exit_status_non_zero(tmp_path: Path) -> None:
    got = _accel_run(
        tmp_path,
        "def bad():\n    raise RuntimeError('in a thread')\n"
        "t = threading.Thread(target=bad, name='worker', daemon=True)\nt.start()\nt.join()\n",
    )
    assert got.returncode == 1, got.stderr
    assert "accel run: thread 'worker' raised RuntimeError at " in got.stderr and "in a thread" in got.stderr
    assert "Traceback" not in got.stderr
