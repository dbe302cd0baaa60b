"""Shared set-up for the distributed tests: a clean launcher environment and free loopback ports."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import accel_abstraction.runtime as runtime
from accel_abstraction.distributed import destroy_distributed

#: Variables a launcher sets; none may leak from the machine running the tests.
LAUNCH_PREFIXES = ("SLURM_", "TORCHELASTIC_", "ACCEL_")
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
               "MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "GLOO_SOCKET_IFNAME")


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
