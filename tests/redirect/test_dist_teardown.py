"""``destroy_process_group()`` under the redirect: a group moved off NCCL waits for every rank first.

Two real processes on 127.0.0.1. Rank 1 reaches its teardown two seconds after rank 0: on a
group the redirect moved from ``"nccl"`` to gloo, rank 0's ``destroy_process_group()`` returns
only once rank 1 has arrived (on gloo, a rank tearing down while its peer is still in its last
collective can abort that peer: "terminate called without an active exception", seen in CI).
A group the script itself asked gloo for is left as the script wrote it: no wait.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from accel_abstraction.testing.ports import free_port
from accel_abstraction.testing.timeouts import scaled

pytestmark = pytest.mark.slow

LATE = 2.0  # seconds rank 1 arrives after rank 0

RANK = """
import sys, time
import torch, torch.distributed as dist
from accel_abstraction.redirect import redirect_cuda

rank, port, lib = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with redirect_cuda():
    dist.init_process_group(lib, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    t = torch.ones(1, device="cuda" if lib == "nccl" else "cpu")
    dist.all_reduce(t)
    assert t.item() == 2.0
    if rank == 1:
        time.sleep(float(sys.argv[4]))
    start = time.monotonic()
    dist.destroy_process_group()
    print(f"destroy took {time.monotonic() - start:.3f}", flush=True)
    assert not dist.is_initialized()
"""


def _destroy_seconds(lib: str) -> float:
    """Run both ranks; the seconds rank 0's ``destroy_process_group()`` took."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    env.update(ACCEL_BACKEND="cpu", OMP_NUM_THREADS="1")
    port = str(free_port())
    procs = [
        subprocess.Popen([sys.executable, "-c", RANK, str(rank), port, lib, str(LATE)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        for rank in (0, 1)
    ]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=scaled(120))
            assert p.returncode == 0, err[-3000:]
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return float(outs[0].split("destroy took ")[1])


def test_a_group_moved_off_nccl_is_destroyed_only_once_every_rank_is_done() -> None:
    start = time.monotonic()
    waited = _destroy_seconds("nccl")
    assert waited >= LATE * 0.5, f"rank 0 destroyed its group {waited:.3f} s after reaching it, before rank 1 arrived"
    assert waited < time.monotonic() - start


def test_a_group_the_script_put_on_gloo_itself_is_destroyed_as_written() -> None:
    assert _destroy_seconds("gloo") < LATE * 0.5
