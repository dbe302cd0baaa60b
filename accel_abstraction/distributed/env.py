"""Which launcher started this process, and the ranks and rendezvous address it handed over.

:func:`detect` reads the environment once and returns a :class:`LaunchEnv`. Precedence:

1. **torchrun / torchelastic** (or any launcher speaking its protocol): ``RANK`` and
   ``WORLD_SIZE`` set. ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK`` (the node
   rank), ``MASTER_ADDR`` and ``MASTER_PORT`` are read too. ``launcher`` is
   ``"torchrun"`` when ``TORCHELASTIC_RUN_ID`` is set, ``"env"`` when the variables were
   set by hand or by another launcher. This wins over SLURM, so ``srun torchrun ...``
   uses torchrun's ranks.
2. **SLURM** (``srun``): ``SLURM_PROCID`` set. Ranks from ``SLURM_PROCID``,
   ``SLURM_NTASKS``, ``SLURM_LOCALID``, ``SLURM_NODEID``; tasks on this node from
   ``SLURM_STEP_TASKS_PER_NODE`` (or ``SLURM_NTASKS_PER_NODE``, ``SLURM_TASKS_PER_NODE``);
   the rendezvous host is ``MASTER_ADDR`` or else the first host of
   ``SLURM_STEP_NODELIST`` (or ``SLURM_JOB_NODELIST``); the port is ``MASTER_PORT`` or
   else :func:`default_slurm_port` (``15000 + SLURM_JOB_ID % 10000``, so two jobs sharing
   a node do not collide).
3. **none**: a single process (rank 0 of 1).

Every inconsistency is a :class:`~accel_abstraction.errors.ConfigError` that names the
variables involved.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

from ..errors import ConfigError
from .slurm import NodeListError, first_host, parse_tasks_per_node

__all__ = ["DEFAULT_MASTER_PORT", "LaunchEnv", "Launcher", "default_slurm_port", "detect"]

Launcher = Literal["torchrun", "env", "slurm", "none"]

#: torchrun's own default port; used when neither ``MASTER_PORT`` nor a SLURM job id is set.
DEFAULT_MASTER_PORT = 29500


@dataclass(frozen=True)
class LaunchEnv:
    """What the launcher told this process. ``*_source`` name where a value came from, for messages."""

    launcher: Launcher
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    node_rank: int = 0
    master_addr: str | None = None
    master_port: int | None = None
    addr_source: str = ""
    port_source: str = ""

    @property
    def rendezvous(self) -> str:
        """``host:port`` with where each came from, e.g. ``10.0.0.1:29500 (MASTER_ADDR, MASTER_PORT)``."""
        if self.master_addr is None:
            return "the launcher's rendezvous store"
        return f"{self.master_addr}:{self.master_port} ({self.addr_source}, {self.port_source})"


def _int(env: Mapping[str, str], name: str, hint: str) -> int:
    raw = env[name]
    try:
        return int(raw.strip())
    except ValueError:
        raise ConfigError(f"environment variable {name}={raw!r} is not an integer; {hint}") from None


def _opt_int(env: Mapping[str, str], name: str, hint: str) -> int | None:
    return _int(env, name, hint) if name in env else None


class _Ranks(NamedTuple):
    """The five rank numbers of :class:`LaunchEnv`, in its field order."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int


def _ranks(
    rank: int, world: int, local_rank: int, local_world: int, node_rank: int, names: tuple[str, str, str, str]
) -> _Ranks:
    """The rank numbers, checked against each other; ``names`` are their variables, for messages."""
    r, w, lr, lw = names
    if world < 1:
        raise ConfigError(f"{w}={world} must be at least 1")
    if not 0 <= rank < world:
        raise ConfigError(f"{r}={rank} must be in 0..{world - 1} because {w}={world}")
    if local_world < 1:
        raise ConfigError(f"{lw}={local_world} must be at least 1")
    if not 0 <= local_rank < local_world:
        raise ConfigError(f"{lr}={local_rank} must be in 0..{local_world - 1} because {lw}={local_world}")
    if local_world > world:
        raise ConfigError(f"{lw}={local_world} cannot exceed {w}={world}")
    return _Ranks(rank, world, local_rank, local_world, node_rank)


def default_slurm_port(env: Mapping[str, str]) -> int:
    """The rendezvous port under SLURM when ``MASTER_PORT`` is unset: ``15000 + SLURM_JOB_ID % 10000``.

    Every task of a job computes the same port; jobs sharing a node get different ones
    (unless their ids are equal modulo 10000). Without ``SLURM_JOB_ID``: 29500.
    """
    job = env.get("SLURM_JOB_ID", "").strip()
    return 15000 + int(job) % 10000 if job.isdigit() else DEFAULT_MASTER_PORT


def _port(env: Mapping[str, str], default: int, default_source: str) -> tuple[int, str]:
    if "MASTER_PORT" not in env:
        return default, default_source
    port = _int(env, "MASTER_PORT", "set it to a free TCP port (1-65535) on the rank-0 host")
    if not 1 <= port <= 65535:
        raise ConfigError(f"environment variable MASTER_PORT={port} is not a TCP port (1-65535)")
    return port, "MASTER_PORT"


def _from_torchrun(env: Mapping[str, str]) -> LaunchEnv:
    if "RANK" not in env or "WORLD_SIZE" not in env:
        have, missing = ("WORLD_SIZE", "RANK") if "WORLD_SIZE" in env else ("RANK", "WORLD_SIZE")
        raise ConfigError(
            f"environment variable {have}={env[have]!r} is set but {missing} is not: a distributed launch "
            f"needs both RANK and WORLD_SIZE (torchrun sets both); set {missing}, or unset {have} to run "
            "a single process"
        )
    hint = "torchrun sets it; check the launcher or unset it"
    rank = _int(env, "RANK", hint)
    world = _int(env, "WORLD_SIZE", hint)
    # Launched by hand without LOCAL_*: assume one node.
    local_rank = _opt_int(env, "LOCAL_RANK", hint)
    local_world = _opt_int(env, "LOCAL_WORLD_SIZE", hint)
    if local_world is None:
        local_world = world
    # Checked here, before rank % local_world below divides by them.
    if world < 1:
        raise ConfigError(f"WORLD_SIZE={world} must be at least 1")
    if local_world < 1:
        raise ConfigError(f"LOCAL_WORLD_SIZE={local_world} must be at least 1")
    if local_rank is None:
        local_rank = rank % local_world
    node_rank = _opt_int(env, "GROUP_RANK", hint)
    names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
    ranks = _ranks(
        rank, world, local_rank, local_world, rank // local_world if node_rank is None else node_rank, names
    )
    addr = env.get("MASTER_ADDR") or None
    port, port_source = _port(env, DEFAULT_MASTER_PORT, f"default port {DEFAULT_MASTER_PORT}")
    launcher: Launcher = "torchrun" if "TORCHELASTIC_RUN_ID" in env else "env"
    if addr is None:  # the launcher's own store (torchelastic) holds the rendezvous
        return LaunchEnv(launcher, *ranks, port_source=port_source)
    return LaunchEnv(launcher, *ranks, addr, port, "MASTER_ADDR", port_source)


def _slurm_local_world(env: Mapping[str, str], node_rank: int, world: int) -> tuple[int, str]:
    for name in ("SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"):
        raw = env.get(name)
        if not raw:
            continue
        try:
            counts = parse_tasks_per_node(raw)
        except NodeListError as exc:
            raise ConfigError(f"environment variable {name}: {exc}") from None
        if len(counts) == 1:  # one value for every node (SLURM_NTASKS_PER_NODE=4)
            return counts[0], name
        if node_rank >= len(counts):
            raise ConfigError(
                f"SLURM_NODEID={node_rank} has no entry in {name}={raw!r} ({len(counts)} nodes listed)"
            )
        return counts[node_rank], name
    return world, "SLURM_NTASKS"


def _from_slurm(env: Mapping[str, str]) -> LaunchEnv:
    hint = "srun sets it; check the job script"
    if "SLURM_NTASKS" not in env:
        raise ConfigError(
            "environment variable SLURM_PROCID is set but SLURM_NTASKS is not; start the processes with "
            "srun (which sets both), or unset SLURM_PROCID to run a single process"
        )
    rank = _int(env, "SLURM_PROCID", hint)
    world = _int(env, "SLURM_NTASKS", hint)
    local_rank = _opt_int(env, "SLURM_LOCALID", hint) or 0
    node_rank = _opt_int(env, "SLURM_NODEID", hint) or 0
    local_world, local_name = _slurm_local_world(env, node_rank, world)
    ranks = _ranks(
        rank,
        world,
        local_rank,
        local_world,
        node_rank,
        ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", local_name),
    )

    addr, addr_source = env.get("MASTER_ADDR") or None, "MASTER_ADDR"
    if addr is None:
        for name in ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
            if env.get(name):
                try:
                    addr = first_host(env[name])
                except NodeListError as exc:
                    raise ConfigError(f"environment variable {name}: {exc}; or set MASTER_ADDR") from None
                addr_source = f"first host of {name}"
                break
    if addr is None:
        raise ConfigError(
            "under SLURM the rendezvous host comes from MASTER_ADDR or SLURM_STEP_NODELIST / "
            "SLURM_JOB_NODELIST, and none is set; set MASTER_ADDR to the rank-0 host"
        )
    default = default_slurm_port(env)
    port, port_source = _port(env, default, f"default port {default} from SLURM_JOB_ID")
    return LaunchEnv("slurm", *ranks, addr, port, addr_source, port_source)


def detect(environ: Mapping[str, str] | None = None) -> LaunchEnv:
    """Read the launcher's variables from ``environ`` (default ``os.environ``); see the module doc."""
    env = os.environ if environ is None else environ
    if "RANK" in env or "WORLD_SIZE" in env:
        return _from_torchrun(env)
    if "SLURM_PROCID" in env:
        return _from_slurm(env)
    return LaunchEnv(launcher="none")
