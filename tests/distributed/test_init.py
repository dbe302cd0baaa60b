"""init_distributed in this process: the single-process no-op, the backend contract, config and rendezvous errors."""

from __future__ import annotations

import socket
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

import accel_abstraction as accel
from accel_abstraction.distributed import init as dist_init
from accel_abstraction.errors import ConfigError
from accel_abstraction.testing.ports import free_port


def _launch_env(monkeypatch: pytest.MonkeyPatch, rank: int, world: int, port: int) -> None:
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", str(world))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))


def test_no_launcher_is_a_single_process_noop() -> None:
    with accel.using("cpu"):
        info = accel.init_distributed()
        assert info == accel.DistInfo(
            rank=0, world_size=1, local_rank=0, local_world_size=1, node_rank=0,
            device=torch.device("cpu"), backend="", is_main_process=True, launcher="none",
        )
        assert not info.is_distributed
        assert accel.init_distributed() is info
        assert not dist.is_initialized()
        accel.barrier()
        assert accel.is_main_process()
        accel.destroy_distributed()


def test_is_main_process_before_init_reads_the_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    _launch_env(monkeypatch, 1, 2, 1)
    assert not accel.is_main_process()


def test_world_size_without_rank_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    with accel.using("cpu"), pytest.raises(ConfigError) as info:
        accel.init_distributed()
    assert "WORLD_SIZE" in str(info.value) and "RANK" in str(info.value)
    assert not dist.is_initialized()


def test_one_rank_group_through_the_real_init(monkeypatch: pytest.MonkeyPatch) -> None:
    _launch_env(monkeypatch, 0, 1, free_port())
    with accel.using("cpu"):
        info = accel.init_distributed()
        assert (info.launcher, info.backend, info.world_size, info.device) == ("env", "gloo", 1, torch.device("cpu"))
        assert dist.is_initialized() and dist.get_backend() == "gloo"
        assert accel.init_distributed() is info
        t = torch.ones(2)
        dist.all_reduce(t)
        accel.barrier()
        accel.destroy_distributed()
        assert not dist.is_initialized()


class _Recorder:
    """Stands in for the selected backend and for dist.init_process_group, recording the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.backend = accel.backend()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def dist_backend(self) -> str:
        return "gloo"

    def before_init_process_group(self, local_rank: int) -> None:
        self.calls.append(("before", local_rank))

    def dist_device_id(self, local_rank: int) -> torch.device:
        return torch.device("meta", local_rank)

    def after_init_process_group(self, local_rank: int) -> None:
        self.calls.append(("after", local_rank))

    def init_process_group(self, **kwargs: Any) -> None:
        self.calls.append(("init", kwargs))


def _recorded_init(monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> tuple[_Recorder, Any]:
    """``accel.init_distributed(**kwargs)`` on cpu with a :class:`_Recorder` for backend and torch; no group is made."""
    with accel.using("cpu"):
        rec = _Recorder()
        monkeypatch.setattr(dist_init, "_selected_backend", lambda: rec)
        monkeypatch.setattr(dist_init.dist, "init_process_group", rec.init_process_group)
        info = accel.init_distributed(**kwargs)
    dist_init._info = None  # no real group was made
    return rec, info


def test_backend_hooks_run_around_init_with_device_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("GROUP_RANK", "1")
    monkeypatch.setenv("MASTER_ADDR", "10.9.8.7")
    monkeypatch.setenv("MASTER_PORT", "1234")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "x")
    monkeypatch.setenv("ACCEL_DIST_TIMEOUT", "42")
    rec, info = _recorded_init(monkeypatch)
    assert [c[0] for c in rec.calls] == ["before", "init", "after"]
    assert rec.calls[0][1] == rec.calls[2][1] == 1
    kwargs = rec.calls[1][1]
    assert kwargs == {
        "backend": "gloo", "init_method": "env://", "rank": 3, "world_size": 4,
        "timeout": timedelta(seconds=42), "device_id": torch.device("meta", 1),
    }
    assert (info.rank, info.local_rank, info.node_rank, info.launcher) == (3, 1, 1, "torchrun")
    assert info.device == torch.device("meta", 1)
    assert not info.is_main_process


def test_keyword_overrides_beat_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    _launch_env(monkeypatch, 0, 2, 5555)
    monkeypatch.setenv("ACCEL_DIST_BACKEND", "nonexistent")
    monkeypatch.setenv("ACCEL_DIST_INIT_METHOD", "tcp://127.0.0.1:1")
    rec, _ = _recorded_init(monkeypatch, backend="gloo", init_method="tcp://127.0.0.1:7", timeout=9)
    kwargs = rec.calls[1][1]
    assert (kwargs["backend"], kwargs["init_method"], kwargs["timeout"]) == ("gloo", "tcp://127.0.0.1:7", timedelta(seconds=9))


def test_a_device_map_of_libraries_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    _launch_env(monkeypatch, 0, 2, 5555)
    rec, info = _recorded_init(monkeypatch, backend="cpu:gloo,meta:gloo")
    assert rec.calls[1][1]["backend"] == info.backend == "cpu:gloo,meta:gloo"


def test_unknown_collective_library_names_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    _launch_env(monkeypatch, 0, 2, free_port())
    monkeypatch.setenv("ACCEL_DIST_BACKEND", "nosuchlib")
    with accel.using("cpu"), pytest.raises(accel.DistributedError) as info:
        accel.init_distributed()
    assert "nosuchlib" in str(info.value) and "ACCEL_DIST_BACKEND" in str(info.value) and "gloo" in str(info.value)


def test_missing_peer_fails_within_the_timeout_naming_the_rendezvous(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    _launch_env(monkeypatch, 0, 2, port)
    monkeypatch.setenv("ACCEL_DIST_TIMEOUT", "600")  # the keyword below wins
    start = time.monotonic()
    with accel.using("cpu"), pytest.raises(accel.DistributedError) as info:
        accel.init_distributed(timeout=3)
    elapsed = time.monotonic() - start
    msg = str(info.value)
    assert elapsed < 3 + 15, elapsed
    assert f"127.0.0.1:{port}" in msg and "MASTER_ADDR" in msg and "MASTER_PORT" in msg
    assert "keyword argument timeout=" in msg and "3 s" in msg
    assert not dist.is_initialized()


def test_timeout_from_pyproject_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.accel.distributed]\ntimeout = 2\n")
    monkeypatch.chdir(tmp_path)
    _launch_env(monkeypatch, 0, 2, free_port())
    with accel.using("cpu"), pytest.raises(accel.DistributedError) as info:
        accel.init_distributed()
    assert f"{tmp_path / 'pyproject.toml'}:2" in str(info.value)


def test_master_port_in_use_names_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        _launch_env(monkeypatch, 0, 2, port)
        start = time.monotonic()
        with accel.using("cpu"), pytest.raises(accel.DistributedError) as info:
            accel.init_distributed(timeout=5)
    msg = str(info.value)
    assert f"Port {port} is already in use" in msg and "MASTER_PORT" in msg, msg
    assert time.monotonic() - start < 5 + 15
    assert not dist.is_initialized()


def test_a_group_made_by_other_code_is_described_not_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    _launch_env(monkeypatch, 0, 1, port)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    group = dist.group.WORLD
    with accel.using("cpu"):
        info = accel.init_distributed()
    assert dist.group.WORLD is group
    assert (info.rank, info.world_size, info.backend, info.launcher) == (0, 1, "gloo", "env")


def test_init_again_after_destroy(monkeypatch: pytest.MonkeyPatch) -> None:
    with accel.using("cpu"):
        for _ in range(2):
            _launch_env(monkeypatch, 0, 1, free_port())
            info = accel.init_distributed()
            assert dist.is_initialized() and info.backend == "gloo"
            accel.destroy_distributed()
            assert not dist.is_initialized()


def test_destroy_waits_on_a_barrier_with_the_configured_timeout_and_still_destroys_when_it_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _launch_env(monkeypatch, 0, 1, free_port())
    monkeypatch.setenv("ACCEL_DIST_TIMEOUT", "7")
    seen: list[Any] = []
    real_barrier = dist.barrier

    def barrier(*args: Any, **kwargs: Any) -> None:
        seen.append(kwargs.get("timeout"))
        real_barrier(*args, **kwargs)

    with accel.using("cpu"):
        info = accel.init_distributed()
        assert info.device_type == "cpu"
        monkeypatch.setattr(dist, "barrier", barrier)
        accel.destroy_distributed()
        assert seen == [timedelta(seconds=7)] and not dist.is_initialized()

        accel.init_distributed()

        def lost_peer(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("Connection closed by peer [127.0.0.1]:1234")

        monkeypatch.setattr(dist, "barrier", lost_peer)
        with pytest.warns(RuntimeWarning, match="not every rank reached the final barrier.*Connection closed"):
            accel.destroy_distributed()
        assert not dist.is_initialized() and dist_init.dist_info() is None
