"""Shared set-up for the distributed tests: a clean launcher environment and free loopback ports."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

import accel_abstraction.runtime as runtime
from accel_abstraction.distributed import destroy_distributed

#: Variables a launcher sets; none may leak from the machine running the tests.
LAUNCH_PREFIXES = ("SLURM_", "TORCHELASTIC_", "ACCEL_")
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
               "MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "GLOO_SOCKET_IFNAME")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (bind to port 0, read it, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_environ() -> dict[str, str]:
    """``os.environ`` without any launcher or accel variable."""
    return {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and not k.startswith(LAUNCH_PREFIXES)}


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no launcher variables, no selection and no process group."""
    for key in list(os.environ):
        if key in LAUNCH_VARS or key.startswith(LAUNCH_PREFIXES):
            monkeypatch.delenv(key)
    runtime.reset()
    yield
    destroy_distributed()
    runtime.reset()
