"""Interrupt a command half-way: start it in a process group of its own, wait until it has
started its work, send a signal, and collect what it said.

For tests of the promise a writing tool makes (``accel port --write``, ``accel patches apply``):
stopped by a signal at any moment, every file it writes is whole (old or new), it says so in
one line, and it leaves no worker behind. The signal lands mid-work only if the caller's
``started`` check sees the first effect of that work (a file written), so pass one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Interrupted", "interrupt_when_started"]


@dataclass(frozen=True)
class Interrupted:
    """What an interrupted command did after the signal."""

    returncode: int | None  # None: it did not stop within the grace period and was killed
    stderr: str
    group_left: bool  # some process of its group was still alive after it exited

    @property
    def hung(self) -> bool:
        return self.returncode is None


def interrupt_when_started(
    args: Sequence[str],
    started: Callable[[], bool],
    *,
    cwd: Path,
    env: Mapping[str, str],
    wait_s: float,
    grace_s: float,
    sig: signal.Signals = signal.SIGTERM,
) -> Interrupted:
    """Run ``args``; once ``started()`` is true (or ``wait_s`` has passed) send ``sig``.

    The command gets ``grace_s`` seconds to stop; past that its whole process group is killed
    and :attr:`Interrupted.hung` is true. Polls ``started`` every 50 ms.
    """
    proc = subprocess.Popen(
        list(args), cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and not started():
        time.sleep(0.05)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        return Interrupted(None, err, group_left=False)
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return Interrupted(proc.returncode, err, group_left=False)
    return Interrupted(proc.returncode, err, group_left=True)
