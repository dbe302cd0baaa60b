"""Real multi-process runs on this machine, over 127.0.0.1: torchrun (one node and two), SLURM variables, a dying rank.

Each run starts ``worker.py`` (a small training script using the public API) in fresh
processes, with a hard time limit after which the whole process group is killed, so a
hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

from accel_abstraction.testing.ports import free_port

from .conftest import clean_environ

WORKER = Path(__file__).with_name("worker.py")
#: Seconds a launch may take before it is killed: generous, this machine's 2 cores are shared.
LIMIT = 420

pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict[str, str]:
    env = clean_environ()
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", ACCEL_DIST_TIMEOUT="180", ACCEL_BACKEND="cpu")
    if Path("/sys/class/net/lo").exists():
        env["GLOO_SOCKET_IFNAME"] = "lo"  # keep gloo on the loopback interface
    env.update(extra)
    return env


def _run_all(cmds: Sequence[tuple[list[str], dict[str, str]]], cwd: Path) -> list[tuple[int, str]]:
    """Start every command, wait for all (at most LIMIT s), return (exit code, output) of each."""
    procs = [
        subprocess.Popen(
            cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        for cmd, env in cmds
    ]
    results = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=LIMIT)
            results.append((p.returncode, out))
    except subprocess.TimeoutExpired:
        outs = []
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            outs.append(p.communicate()[0] or "")
        pytest.fail(f"launch did not finish within {LIMIT} s; output:\n" + "\n-----\n".join(o[-3000:] for o in outs))
    return results


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--max-restarts=0", *args]


def _ok(results: list[tuple[int, str]]) -> None:
    for code, out in results:
        assert code == 0, f"exit code {code}; output:\n{out[-6000:]}"


def _json(out: Path, rank: int) -> dict:
    return json.loads((out / f"rank{rank}.json").read_text())


def _check_training(out: Path, world: int, device_type: str) -> None:
    """Collectives correct; DDP replicas bitwise identical; equal to the single-process full-batch run."""
    for rank in range(world):
        res = _json(out, rank)
        c = res["collectives"]
        assert c["tensor_device_type"] == device_type and res["param_device_type"] == device_type
        assert c["all_reduce"] == [world * (world + 1) / 2] * 3
        assert c["broadcast"] == [float(world - 1 + 10)]
        assert c["all_gather"] == [[float(r), float(2 * r)] for r in range(world)]
        assert c["all_gather_into_tensor"] == [float(r) for r in range(world)]
        assert c["reduce_scatter_tensor"] == [float(world * rank + sum(range(world)))]
        assert c["reduce_scatter"] == [float(world * rank + sum(range(world)))]
        assert c["reduce_on_0"] == ([world * (world + 1) / 2] if rank == 0 else None)
        assert c["gather_on_0"] == ([[3.0 * r] for r in range(world)] if rank == 0 else None)
        assert c["scatter"] == [7.0 + rank]
        assert c["all_to_all_single"] == [float(10 * r + rank) for r in range(world)]
        assert c.get("recv") == ([42.0] if rank == world - 1 else None)
        assert c["all_reduce_strided"] == [[world * v for v in row] for row in [[0, 3], [1, 4], [2, 5]]]
        assert c["all_gather_object"] == [{"rank": r} for r in range(world)]
        assert c["all_reduce_avg"] == [(world + 1) / 2] * 2
        assert c["reduce_scatter_tensor_avg"] == [float(rank + sum(range(world)) / world)]
        assert c["all_to_all"] == [[float(10 * r + rank)] for r in range(world)]
        total = sum(range(world))
        assert c["all_reduce_coalesced"] == [[float(total)] * 2, [2.0 * total] * 3]
        assert c["all_reduce_view"] == [0.0, 1.0, 2.0 * world, 3.0 * world, 4.0 * world, 5.0, 6.0, 7.0]
        assert c["async_future"] == [True, [world * (world + 1.0)] * 2, [world * (world + 1) / 2] * 2]
        assert res["info"]["rank"] == rank and res["info"]["world_size"] == world
        assert res["info"]["is_main_process"] is (rank == 0) and res["info"]["accel_is_main_process"] is (rank == 0)
    states = [torch.load(out / f"rank{r}.pt") for r in range(world)]
    for kind in ("mlp", "exact"):
        for r in range(1, world):
            for name, value in states[0][kind].items():
                assert torch.equal(value, states[r][kind][name]), f"{kind}.{name} differs between rank 0 and {r}"
    # The exact model: float64, integer data, weights on a dyadic grid and power-of-two
    # scale factors: every sum is exact, so DDP and the full batch agree to the bit.
    for name, value in states[0]["ref_exact"].items():
        assert torch.equal(states[0]["exact"][name], value), f"exact.{name}: DDP != single process"
    assert not torch.equal(states[0]["exact"]["weight"], torch.tensor([[0.25, -0.5, 0.75, 1.0]], dtype=torch.float64))
    # The MLP in float32: the batch reduction runs in another order (two half-batch GEMMs plus
    # an allreduce instead of one GEMM), so the last bits may differ; a tight tolerance.
    for name, value in states[0]["ref_mlp"].items():
        torch.testing.assert_close(states[0]["mlp"][name], value, rtol=1e-5, atol=1e-6)


def _emulated_neuron_usable() -> str | None:
    """``None`` when the emulated neuron backend can run here, else why not."""
    try:
        import accel_neuron.emulated_dist  # noqa: F401
        from accel_neuron import emulator  # noqa: F401
    except ImportError as exc:
        return f"the neuron emulator or its process group is not importable: {exc}"
    return None


@pytest.mark.parametrize("backend", ["cpu", "neuron"])
def test_torchrun_one_node_two_ranks(backend: str, tmp_path: Path) -> None:
    env = _env()
    if backend == "neuron":
        reason = _emulated_neuron_usable()
        if reason:
            pytest.skip(reason)
        env.update(ACCEL_BACKEND="neuron", ACCEL_NEURON_EMULATE="1")
    cmd = _torchrun(
        "--nproc-per-node=2", "--master-addr=127.0.0.1", f"--master-port={free_port()}",
        str(WORKER), "train", str(tmp_path),
    )
    _ok(_run_all([(cmd, env)], tmp_path))
    _check_training(tmp_path, 2, "cpu" if backend == "cpu" else "neuron")
    for rank in range(2):
        info = _json(tmp_path, rank)["info"]
        assert info["launcher"] == "torchrun" and info["local_rank"] == rank and info["node_rank"] == 0
        assert info["backend"] == ("gloo" if backend == "cpu" else "neuron")


def test_torchrun_two_nodes_c10d_rendezvous(tmp_path: Path) -> None:
    """Two torchrun agents on this machine act as two nodes meeting at one c10d endpoint."""
    port = free_port()
    cmd = _torchrun(
        "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
        "--rdzv-id=accel-two-nodes", "--local-addr=127.0.0.1", str(WORKER), "train", str(tmp_path),
    )
    _ok(_run_all([(cmd, _env()), (cmd, _env())], tmp_path))
    _check_training(tmp_path, 2, "cpu")
    infos = [_json(tmp_path, r)["info"] for r in range(2)]
    assert sorted(i["node_rank"] for i in infos) == [0, 1]
    assert all(i["local_rank"] == 0 and i["local_world_size"] == 1 for i in infos)


def _free_slurm_port() -> int:
    """A free port in the range the SLURM default (15000 + job id % 10000) can produce."""
    for port in range(15000 + os.getpid() % 9000, 25000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 15000-24999")


def test_slurm_variables_give_ranks_and_device(tmp_path: Path) -> None:
    port = _free_slurm_port()
    common = {
        "SLURM_JOB_ID": str(1_000_000 + port - 15000),  # default port = 15000 + id % 10000 = port
        "SLURM_NTASKS": "2",
        "SLURM_NODEID": "0",
        "SLURM_STEP_TASKS_PER_NODE": "2",
        "SLURM_STEP_NODELIST": "127.0.0.1",
        "SLURM_JOB_NODELIST": "127.0.0.1",
    }
    cmds = [
        ([sys.executable, str(WORKER), "info", str(tmp_path)],
         _env(**common, SLURM_PROCID=str(r), SLURM_LOCALID=str(r)))
        for r in range(2)
    ]
    _ok(_run_all(cmds, tmp_path))
    for rank in range(2):
        res = _json(tmp_path, rank)
        assert res["sum_of_ranks"] == 1.0
        assert res["info"] == {
            "rank": rank, "world_size": 2, "local_rank": rank, "local_world_size": 2, "node_rank": 0,
            "device": "cpu", "backend": "gloo", "is_main_process": rank == 0, "launcher": "slurm",
            "accel_is_main_process": rank == 0,
        }


@pytest.mark.parametrize(
    ("mode", "backend", "timeout"),
    [("die", "cpu", 20), ("die", "neuron", 20), ("stall", "cpu", 4), ("stall", "neuron", 4)],
)
def test_a_lost_rank_makes_the_survivor_fail_within_the_timeout(
    mode: str, backend: str, timeout: int, tmp_path: Path
) -> None:
    """Rank 1 exits (``die``) or stops taking part (``stall``): rank 0's barrier raises, it never hangs."""
    extra = {"ACCEL_BACKEND": "cpu"}
    if backend == "neuron":
        reason = _emulated_neuron_usable()
        if reason:
            pytest.skip(reason)
        extra = {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}
    port = free_port()
    cmds = [
        ([sys.executable, str(WORKER), mode, str(tmp_path)],
         _env(RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
              ACCEL_DIST_TIMEOUT=str(timeout), **extra))
        for r in range(2)
    ]
    (code0, out0), (code1, _) = _run_all(cmds, tmp_path)
    assert code1 == 3
    assert code0 == 0, out0[-4000:]
    res = _json(tmp_path, 0)
    assert res["type"] == "DistributedError", res
    assert "barrier failed on rank 0 of 2" in res["error"] and "ACCEL_DIST_TIMEOUT" in res["error"]
    assert res["elapsed"] < timeout + 10, res
    if mode == "stall":
        assert res["elapsed"] >= timeout - 1, res  # it waited for the peer, then gave up
