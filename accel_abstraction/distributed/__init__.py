"""Distributed training on any backend, on PyTorch's own launchers and collectives.

::

    import accel_abstraction as accel

    info = accel.init_distributed()          # torchrun, srun, or a plain single process
    model = DDP(model.to(info.device))
    ...
    accel.destroy_distributed()

Modules: :mod:`.env` (which launcher, which ranks), :mod:`.slurm` (SLURM's host-list
syntax), :mod:`.init` (joining and leaving the process group), :mod:`.teardown` (every rank
done before any destroys the group), :mod:`.ddp` (what DDP takes as ``device_ids``). See ``docs/distributed.md``.
"""

from __future__ import annotations

from .ddp import ddp_device_ids, ddp_output_device, fsdp_device_id
from .env import LaunchEnv, detect
from .init import (
    DistInfo,
    DistributedError,
    barrier,
    destroy_distributed,
    dist_info,
    init_distributed,
    is_main_process,
)

__all__ = [
    "DistInfo",
    "DistributedError",
    "LaunchEnv",
    "barrier",
    "ddp_device_ids",
    "ddp_output_device",
    "fsdp_device_id",
    "destroy_distributed",
    "detect",
    "dist_info",
    "init_distributed",
    "is_main_process",
]
