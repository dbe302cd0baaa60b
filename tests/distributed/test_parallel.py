"""FSDP2, DDP ``no_sync``, tensor parallelism, a 2-D mesh and DCP resharding under torchrun, on cpu and emulated neuron.

Per backend, two launches of ``parallel_worker.py`` on 127.0.0.1 (each killed after a
time limit): 2 ranks for the one-axis scenarios and a DCP save, then 4 ranks for the
2 x 2 mesh and for loading that checkpoint (resharding 2 -> 4). Every scenario is
compared with a single-process reference computed in the worker.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accel_abstraction.testing.ports import free_port

from .test_launch import _emulated_neuron_usable, _env, _ok, _run_all, _torchrun

WORKER = Path(__file__).with_name("parallel_worker.py")
TOL = 1e-5

pytestmark = pytest.mark.slow


def _launch(backend: str, group: str, nproc: int, out: Path, ckpt: Path) -> list[dict]:
    env = _env(ACCEL_DIST_TIMEOUT="120")
    if backend == "neuron":
        reason = _emulated_neuron_usable()
        if reason:
            pytest.skip(reason)
        # One emulated device per rank, as on Trainium (one NeuronCore per process).
        env.update(ACCEL_BACKEND="neuron", ACCEL_NEURON_EMULATE="1", ACCEL_NEURON_EMULATE_DEVICES=str(nproc))
    out.mkdir(parents=True, exist_ok=True)
    cmd = _torchrun(
        f"--nproc-per-node={nproc}", "--master-addr=127.0.0.1", f"--master-port={free_port()}",
        str(WORKER), group, str(out), str(ckpt),
    )
    _ok(_run_all([(cmd, env)], out))
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(nproc)]


@pytest.fixture(scope="module", params=["cpu", "neuron"])
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """Both launches for one backend: ``{"two": [rank results], "four": [...]}``."""
    root = tmp_path_factory.mktemp(f"parallel-{request.param}")
    ckpt = root / "ckpt"
    ckpt.mkdir()
    two = _launch(request.param, "two", 2, root / "two", ckpt)
    four = _launch(request.param, "four", 4, root / "four", ckpt)
    for results in (two, four):
        for rank, res in enumerate(results):
            # Emulated neuron: each rank on its own device, neuron:<local rank>, as on Trainium.
            assert res["device"] == ("cpu" if request.param == "cpu" else f"neuron:{rank}")
            assert res["backend"] == ("gloo" if request.param == "cpu" else "neuron")
    return {"two": two, "four": four}


def _scenario(runs: dict[str, list[dict]], group: str, name: str) -> list[dict]:
    results = [res[name] for res in runs[group]]
    for rank, res in enumerate(results):
        assert res["max_diff"] <= TOL, f"{name} on rank {rank}: {res}"
    return results


@pytest.mark.parametrize("name", ["fsdp2", "fsdp2_mixed_precision"])
def test_fsdp2_matches_the_single_process_replay_bitwise(runs: dict, name: str) -> None:
    # Per-shard gradients averaged as the reduce-scatter does: the same additions, so the same bits.
    assert all(res["bitwise"] for res in _scenario(runs, "two", name))


def test_activation_checkpointing_under_fsdp2_changes_nothing(runs: dict) -> None:
    for res in _scenario(runs, "two", "fsdp2_activation_checkpointing"):
        assert res["bitwise"] and res["vs_reference"] == 0.0


def test_ddp_no_sync_accumulation_matches_bitwise(runs: dict) -> None:
    assert all(res["bitwise"] for res in _scenario(runs, "two", "ddp_no_sync"))


@pytest.mark.parametrize("name", ["tp_mlp", "tp_attention"])
def test_tensor_parallel_matches_the_unsharded_module(runs: dict, name: str) -> None:
    # RowwiseParallel sums partial products across ranks: another summation order, last bits differ.
    _scenario(runs, "two", name)


def test_2d_mesh_data_by_tensor_parallel_on_four_ranks(runs: dict) -> None:
    _scenario(runs, "four", "mesh_2d")


def test_dcp_checkpoint_saved_on_two_ranks_loads_on_four(runs: dict) -> None:
    results = _scenario(runs, "four", "dcp_reshard_2_to_4")
    assert all(res["bitwise"] for res in results)
    # Resharded: each of 4 ranks holds 4 of the 16 rows of the first weight (8 on 2 ranks).
    assert all(res["local_rows"][0] == 4 for res in results)
