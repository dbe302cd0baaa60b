"""Launcher detection: the ranks and rendezvous address torchrun, SLURM or nothing hand over."""

from __future__ import annotations

import pytest

from accel_abstraction.distributed.env import DEFAULT_MASTER_PORT, detect
from accel_abstraction.errors import ConfigError

TORCHRUN = {
    "RANK": "5",
    "WORLD_SIZE": "8",
    "LOCAL_RANK": "1",
    "LOCAL_WORLD_SIZE": "4",
    "GROUP_RANK": "1",
    "MASTER_ADDR": "10.1.2.3",
    "MASTER_PORT": "29400",
    "TORCHELASTIC_RUN_ID": "job7",
}


def test_no_launcher_is_one_process() -> None:
    env = detect({"PATH": "/bin"})
    assert (env.launcher, env.rank, env.world_size, env.local_rank, env.node_rank) == ("none", 0, 1, 0, 0)


def test_torchrun() -> None:
    env = detect(TORCHRUN)
    assert env.launcher == "torchrun"
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size, env.node_rank) == (5, 8, 1, 4, 1)
    assert (env.master_addr, env.master_port) == ("10.1.2.3", 29400)


def test_torchrun_variables_win_over_slurm() -> None:
    # `srun torchrun ...`: SLURM_PROCID is the node's task, RANK the worker's rank.
    env = detect({**TORCHRUN, "SLURM_PROCID": "1", "SLURM_NTASKS": "2"})
    assert (env.launcher, env.rank, env.world_size) == ("torchrun", 5, 8)


def test_hand_set_variables_assume_one_node() -> None:
    env = detect({"RANK": "3", "WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1"})
    assert env.launcher == "env"
    assert (env.local_rank, env.local_world_size, env.node_rank) == (3, 4, 0)
    assert env.master_port == DEFAULT_MASTER_PORT


def test_world_size_without_rank_names_both() -> None:
    with pytest.raises(ConfigError) as info:
        detect({"WORLD_SIZE": "2"})
    assert "WORLD_SIZE" in str(info.value) and "RANK" in str(info.value)


def test_rank_without_world_size_names_both() -> None:
    with pytest.raises(ConfigError, match="RANK.*WORLD_SIZE"):
        detect({"RANK": "0"})


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"RANK": "two", "WORLD_SIZE": "4"}, ["RANK", "'two'"]),
        ({"RANK": "4", "WORLD_SIZE": "4"}, ["RANK=4", "WORLD_SIZE=4"]),
        ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}, ["LOCAL_RANK=2"]),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "70000", "MASTER_ADDR": "h"}, ["MASTER_PORT"]),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "x", "MASTER_ADDR": "h"}, ["MASTER_PORT", "'x'"]),
    ],
)
def test_bad_torchrun_values_name_the_variable(env: dict[str, str], names: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        detect(env)
    for name in names:
        assert name in str(info.value)


SLURM = {
    "SLURM_JOB_ID": "123456",
    "SLURM_PROCID": "5",
    "SLURM_NTASKS": "8",
    "SLURM_LOCALID": "1",
    "SLURM_NODEID": "1",
    "SLURM_STEP_TASKS_PER_NODE": "4(x2)",
    "SLURM_JOB_NODELIST": "trn[07-08]",
    "SLURM_STEP_NODELIST": "trn[07-08]",
}


def test_slurm() -> None:
    env = detect(SLURM)
    assert env.launcher == "slurm"
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size, env.node_rank) == (5, 8, 1, 4, 1)
    assert env.master_addr == "trn07"
    assert env.master_port == 15000 + 123456 % 10000
    assert "SLURM_STEP_NODELIST" in env.rendezvous and "SLURM_JOB_ID" in env.rendezvous


def test_slurm_uneven_tasks_per_node() -> None:
    env = detect({**SLURM, "SLURM_PROCID": "6", "SLURM_NODEID": "2", "SLURM_LOCALID": "0",
                  "SLURM_NTASKS": "7", "SLURM_STEP_TASKS_PER_NODE": "3(x2),1"})
    assert (env.local_world_size, env.node_rank) == (1, 2)


def test_slurm_ntasks_per_node_and_job_nodelist() -> None:
    env = detect({k: v for k, v in SLURM.items() if not k.startswith("SLURM_STEP")} | {"SLURM_NTASKS_PER_NODE": "4"})
    assert env.local_world_size == 4
    assert env.master_addr == "trn07"


def test_slurm_master_variables_win() -> None:
    env = detect({**SLURM, "MASTER_ADDR": "10.0.0.9", "MASTER_PORT": "4000"})
    assert (env.master_addr, env.master_port) == ("10.0.0.9", 4000)


@pytest.mark.parametrize(
    ("change", "names"),
    [
        ({"SLURM_NTASKS": None}, ["SLURM_NTASKS", "srun"]),
        ({"SLURM_STEP_NODELIST": "trn[07-08", "SLURM_JOB_NODELIST": None}, ["SLURM_STEP_NODELIST"]),
        ({"SLURM_STEP_NODELIST": None, "SLURM_JOB_NODELIST": None}, ["MASTER_ADDR"]),
        ({"SLURM_NODEID": "3"}, ["SLURM_NODEID=3", "SLURM_STEP_TASKS_PER_NODE"]),
        ({"SLURM_PROCID": "8"}, ["SLURM_PROCID=8", "SLURM_NTASKS=8"]),
    ],
)
def test_bad_slurm_values_name_the_variable(change: dict[str, str | None], names: list[str]) -> None:
    env = {k: v for k, v in {**SLURM, **change}.items() if v is not None}
    with pytest.raises(ConfigError) as info:
        detect(env)
    for name in names:
        assert name in str(info.value)
