"""Hostile launcher variables and repeated init_distributed (issue 14): clear errors, no surprises."""

from __future__ import annotations

import pytest
import torch.distributed as dist

import accel_abstraction as accel
from accel_abstraction.distributed import DistributedError
from accel_abstraction.distributed.env import detect
from accel_abstraction.errors import ConfigError
from accel_abstraction.testing.ports import free_port


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE=0 must be at least 1"),
        ({"RANK": "0", "WORLD_SIZE": "-2"}, "WORLD_SIZE=-2 must be at least 1"),
        ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "0"}, "LOCAL_WORLD_SIZE=0 must be at least 1"),
    ],
)
def test_zero_world_size_is_a_config_error(env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=message):
        detect(env)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError, match=message):
        accel.init_distributed()


def test_second_init_with_other_arguments_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    info = accel.init_distributed()  # single process: no group
    assert accel.init_distributed() is info and accel.init_distributed(timeout=600) is info
    with pytest.raises(DistributedError) as caught:
        accel.init_distributed(timeout=1, backend="nccl")
    msg = str(caught.value)
    assert "init_distributed() was already called and it runs as a single process" in msg
    assert "backend='nccl' (now None), timeout=1.0 (now 600.0)" in msg
    assert "accel.destroy_distributed() first" in msg
    accel.destroy_distributed()
    assert accel.init_distributed(timeout=1).rank == 0  # after destroy: a fresh start


def test_second_init_against_a_live_group(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}.items():
        monkeypatch.setenv(key, value)
    with accel.using("cpu"):
        info = accel.init_distributed(timeout=30)
        assert dist.is_initialized() and info.backend == "gloo"
        with pytest.raises(DistributedError, match=r"its process group \(gloo\) is live; this call asks for timeout=5.0"):
            accel.init_distributed(timeout=5)
        assert accel.init_distributed(timeout=30) is info
        accel.destroy_distributed()
