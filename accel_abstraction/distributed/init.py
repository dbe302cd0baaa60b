"""One call that joins the process group on any backend: :func:`init_distributed`.

It replaces the CUDA-only idiom::

    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))

with the same steps, asked of the selected backend object instead of named in the code:

1. read the launcher's environment (:func:`accel_abstraction.distributed.env.detect`);
2. read ``[tool.accel.distributed]`` / ``ACCEL_DIST_*`` / keyword overrides
   (:data:`~accel_abstraction.sections.DIST`: ``backend``, ``init_method``,
   ``timeout``);
3. ``backend.before_init_process_group(local_rank)`` (bind the device; a backend whose
   runtime must stay untouched until the group exists sets its visible-devices variable
   here instead);
4. ``torch.distributed.init_process_group`` with the collective library
   ``backend.dist_backend()``, ``device_id=backend.dist_device_id(local_rank)`` where that
   is not ``None``, and the configured timeout;
5. ``backend.after_init_process_group(local_rank)``.

The launchers and the collectives are PyTorch's own (torchrun, c10d); nothing here
launches processes or moves tensors.

Why one module of ~400 lines: it is the life cycle of one process group (join, read back,
leave), whose steps share the module's record of the group and its lock; the launcher's
environment (:mod:`.env`), SLURM (:mod:`.slurm`) and the teardown's wait (:mod:`.teardown`) are
already apart.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from ..errors import AccelError, ConfigError, headline
from ..sections import DIST, DistConfig
from .env import LaunchEnv, detect
from .teardown import settle_before_destroy

if TYPE_CHECKING:
    from ..interface import Backend

__all__ = [
    "DistInfo",
    "DistributedError",
    "barrier",
    "destroy_distributed",
    "dist_info",
    "init_distributed",
    "is_main_process",
]


class DistributedError(AccelError, RuntimeError):
    """Joining, using or leaving the process group failed. Says where it rendezvoused and what to check."""


@dataclass(frozen=True)
class DistInfo:
    """Where this process sits in the job, returned by :func:`init_distributed`.

    ``device`` is the device this rank computes on (``cuda:3``, ``neuron``, ``cpu``);
    ``backend`` the ``torch.distributed`` collective library in use (``""`` when no
    process group was created); ``launcher`` one of ``"torchrun"``, ``"env"`` (the
    torchrun variables set by hand or by another launcher), ``"slurm"``, ``"none"``.
    """

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    device: torch.device
    backend: str
    is_main_process: bool
    launcher: str

    @property
    def device_type(self) -> str:
        """The device type a ``DeviceMesh`` takes: ``init_device_mesh(info.device_type, (info.world_size,))``."""
        return self.device.type

    @property
    def is_distributed(self) -> bool:
        """True when this process belongs to a process group of more than one rank."""
        return self.world_size > 1

    @property
    def num_nodes(self) -> int:
        """Number of nodes, assuming the same number of ranks on each (as torchrun and srun start them)."""
        return max(1, self.world_size // self.local_world_size)


_lock = threading.RLock()
_info: DistInfo | None = None
_settings: DistConfig | None = None


def _selected_backend() -> Backend:
    from ..runtime import current

    return current()


def _device_of(backend: Backend, local_rank: int) -> torch.device:
    """The device this rank uses: the backend's ``dist_device_id``, else its current device."""
    bound = backend.dist_device_id(local_rank)
    if bound is not None:
        return bound
    if backend.device_count() > 1:
        return backend.device(backend.current_device())
    return backend.device()


def _check_registered(name: str, settings: DistConfig) -> None:
    # A device map such as "cpu:gloo,cuda:nccl" names one library per device type.
    if all(dist.is_backend_available(part.rpartition(":")[2].strip()) for part in name.split(",")):
        return
    source = settings.source_of("backend")
    origin = f" (from {source})" if settings.backend else " (the selected backend's dist_backend())"
    known = [b for b in dist.Backend.backend_list if b != "undefined" and dist.is_backend_available(b)]
    raise DistributedError(
        f"torch.distributed has no collective library {name!r}{origin}; available here: "
        f"{', '.join(known) or 'none'}. Install or activate the plugin that registers it, or set "
        "ACCEL_DIST_BACKEND (or [tool.accel.distributed] backend) to one of those"
    )


def _format_addr(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _init_method(launch: LaunchEnv, settings: DistConfig) -> str:
    if settings.init_method:
        return settings.init_method
    if launch.launcher == "torchrun":
        return "env://"  # reuses the torchrun agent's store
    if launch.master_addr is None:
        raise ConfigError(
            "RANK and WORLD_SIZE are set but MASTER_ADDR is not, so there is nowhere to rendezvous; "
            "set MASTER_ADDR (and MASTER_PORT) to the rank-0 host, or start the job with torchrun"
        )
    return f"tcp://{_format_addr(launch.master_addr)}:{launch.master_port}"


def _rendezvous_error(
    exc: BaseException, launch: LaunchEnv, name: str, init_method: str, settings: DistConfig, elapsed: float
) -> DistributedError:
    first = headline(exc).rstrip(".")
    low = str(exc).lower()
    timeout = settings.timeout
    timeout_src = settings.source_of("timeout")
    where = init_method if settings.init_method else launch.rendezvous
    if launch.launcher == "torchrun":
        vars_hint = "torchrun's --master-addr/--master-port or --rdzv-endpoint (MASTER_ADDR, MASTER_PORT)"
        port_hint = "torchrun's --master-port or --rdzv-endpoint (MASTER_PORT)"
    elif launch.launcher == "slurm":
        vars_hint = f"MASTER_ADDR and MASTER_PORT (here: {launch.addr_source}, {launch.port_source})"
        port_hint = f"MASTER_PORT (here: {launch.port_source})"
    else:
        vars_hint = "MASTER_ADDR and MASTER_PORT"
        port_hint = "MASTER_PORT"
    if settings.init_method:
        vars_hint = port_hint = f"the init_method {init_method!r} ({settings.source_of('init_method')})"
    head = (
        f"rank {launch.rank} of {launch.world_size} could not join the process group "
        f"(collective library {name!r}, rendezvous at {where}) after {elapsed:.1f} s: {first}."
    )
    if "address already in use" in low or "eaddrinuse" in low or "errno: 98" in low:
        taken = (
            f"The port of {init_method!r} is already in use"
            if settings.init_method
            else f"Port {launch.master_port} is already in use on {launch.master_addr}"
        )
        return DistributedError(
            f"{head} {taken}: another job or a leftover process holds it. Choose a free port with {port_hint}"
        )
    if "timed out" in low or "timeout" in low:
        return DistributedError(
            f"{head} Not every one of the {launch.world_size} processes reached the rendezvous within the "
            f"{timeout:g} s timeout ({timeout_src}): one failed to start, exited early, or cannot reach "
            f"the rank-0 host. Check {vars_hint}, that all processes were started"
            + (" (under SLURM: one task per rank, started with srun)" if launch.launcher == "slurm" else "")
            + ", and the other ranks' logs"
        )
    return DistributedError(
        f"{head} Check {vars_hint}: the address must name the rank-0 host, reachable from this one, "
        f"and the port must be free there"
    )


def _existing_info(backend: Backend, launch: LaunchEnv) -> DistInfo:
    """Describe a process group created outside :func:`init_distributed`."""
    rank, world = dist.get_rank(), dist.get_world_size()
    local_world = launch.local_world_size if launch.world_size == world else world
    local_rank = launch.local_rank if launch.world_size == world else rank % local_world
    return DistInfo(
        rank=rank,
        world_size=world,
        local_rank=local_rank,
        local_world_size=local_world,
        node_rank=launch.node_rank if launch.world_size == world else rank // local_world,
        device=_device_of(backend, local_rank),
        backend=str(dist.get_backend()),
        is_main_process=rank == 0,
        launcher=launch.launcher,
    )


def init_distributed(**overrides: Any) -> DistInfo:
    """Join the process group the launcher set up, on the selected backend; return this rank's :class:`DistInfo`.

    Keyword arguments override ``ACCEL_DIST_*`` and ``[tool.accel.distributed]``:
    ``backend`` (collective library; default ``accel.dist_backend()``), ``init_method``
    (default ``env://`` under torchrun, ``tcp://MASTER_ADDR:MASTER_PORT`` otherwise) and
    ``timeout`` (seconds, default 600; bounds the rendezvous and every collective).

    Idempotent: later calls return the first call's result (call
    :func:`destroy_distributed` to start over). With no launcher environment it creates
    no process group and returns rank 0 of 1, so the same script runs as a single process.
    If a process group already exists (made by other code), it is described, not replaced.

    Raises :class:`~accel_abstraction.errors.ConfigError` for inconsistent launcher
    variables or settings, :class:`DistributedError` when the rendezvous fails (naming the
    address, port and the variables to check).
    """
    global _info, _settings
    with _lock:
        if _info is not None and (dist.is_initialized() or not _info.backend):
            _check_same(overrides)
            return _info
        settings = DIST.load(**overrides)
        launch = detect()
        backend = _selected_backend()
        if not dist.is_available():
            raise DistributedError("this torch build has no torch.distributed support; install a build with it")
        if dist.is_initialized():
            info = _existing_info(backend, launch)
        elif launch.launcher == "none":
            info = DistInfo(
                rank=0,
                world_size=1,
                local_rank=0,
                local_world_size=1,
                node_rank=0,
                device=_device_of(backend, 0),
                backend="",
                is_main_process=True,
                launcher="none",
            )
        else:
            info = _init_group(backend, launch, settings)
        _info, _settings = info, settings
        return info


def _check_same(overrides: dict[str, Any]) -> None:
    """Refuse arguments of a repeated :func:`init_distributed` that differ from the live group's."""
    if _settings is None:
        return
    wanted = DIST.load(**overrides)
    differ = [
        f"{name}={getattr(wanted, name)!r} (now {getattr(_settings, name)!r})"
        for name in DIST.defaults
        if name in overrides and overrides[name] is not None and getattr(wanted, name) != getattr(_settings, name)
    ]
    if differ:
        live = f"its process group ({_info.backend}) is live" if _info and _info.backend else "it runs as a single process"
        raise DistributedError(
            f"init_distributed() was already called and {live}; this call asks for "
            f"{', '.join(differ)}, which would not take effect. Call accel.destroy_distributed() first to "
            "start over with these settings, or call init_distributed() without them"
        )


def _init_group(backend: Backend, launch: LaunchEnv, settings: DistConfig) -> DistInfo:
    name = settings.backend or backend.dist_backend()
    _check_registered(name, settings)
    init_method = _init_method(launch, settings)
    backend.before_init_process_group(launch.local_rank)
    kwargs: dict[str, Any] = {
        "backend": name,
        "init_method": init_method,
        "rank": launch.rank,
        "world_size": launch.world_size,
        "timeout": timedelta(seconds=settings.timeout),
    }
    device_id = backend.dist_device_id(launch.local_rank)
    if device_id is not None:
        kwargs["device_id"] = device_id
    start = time.monotonic()
    try:
        _within(settings.timeout + RENDEZVOUS_GRACE_S, dist.init_process_group, kwargs)
    except _Stuck:
        raise DistributedError(
            f"rank {launch.rank} of {launch.world_size} could not join the process group: the rendezvous at "
            f"{init_method} did not answer within {settings.timeout:g} s ({settings.source_of('timeout')}) plus "
            f"{RENDEZVOUS_GRACE_S:g} s. Something is listening there that is not rank 0's torch.distributed store "
            "(another program on that port?), or rank 0 is stuck: check MASTER_ADDR/MASTER_PORT and rank 0's log"
        ) from None
    except (RuntimeError, ValueError, OSError) as exc:
        raise _rendezvous_error(exc, launch, name, init_method, settings, time.monotonic() - start) from exc
    backend.after_init_process_group(launch.local_rank)
    return DistInfo(
        rank=launch.rank,
        world_size=launch.world_size,
        local_rank=launch.local_rank,
        local_world_size=launch.local_world_size,
        node_rank=launch.node_rank,
        device=_device_of(backend, launch.local_rank),
        backend=name,
        is_main_process=launch.rank == 0,
        launcher=launch.launcher,
    )


#: How long past the configured timeout a rendezvous may take before it is given up as stuck
#: (seconds): torch's own store client waits forever for a server that accepts but never answers.
RENDEZVOUS_GRACE_S = 10.0


class _Stuck(Exception):
    pass


def _within(seconds: float, fn: Any, kwargs: dict[str, Any]) -> None:
    """``fn(**kwargs)`` in a helper thread; :class:`_Stuck` if it has not returned after ``seconds``
    (the thread, blocked in torch's C++, is left behind as a daemon); its exception is re-raised."""
    box: dict[str, BaseException] = {}

    def target() -> None:
        try:
            fn(**kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="accel-rendezvous", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise _Stuck
    if "error" in box:
        raise box["error"]


def dist_info() -> DistInfo | None:
    """The :class:`DistInfo` of the last :func:`init_distributed`, or ``None`` before it."""
    return _info


def destroy_distributed() -> None:
    """Leave and destroy the default process group (if any) and forget :func:`init_distributed`'s result.

    A no-op in a single process. Call it at the end of training on every rank. It first
    waits (up to the configured timeout) until every rank has reached it
    (:func:`settle_before_destroy`), then destroys the group.
    """
    global _info, _settings
    with _lock:
        if dist.is_available() and dist.is_initialized():
            settle_before_destroy("destroy_distributed", _settings.timeout if _settings is not None else None)
            dist.destroy_process_group()
        _info = _settings = None


def barrier() -> None:
    """Wait until every rank reaches this point. A no-op when no process group exists.

    Raises :class:`DistributedError` (within the configured timeout) when a peer has
    exited or does not arrive.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return
    start = time.monotonic()
    try:
        dist.barrier()
    except RuntimeError as exc:
        settings = _settings
        limit = f"{settings.timeout:g} s ({settings.source_of('timeout')})" if settings else "the group's timeout"
        raise DistributedError(
            f"barrier failed on rank {dist.get_rank()} of {dist.get_world_size()} after "
            f"{time.monotonic() - start:.1f} s (timeout {limit}): {headline(exc)}. Another rank has probably "
            "exited or is stuck: check the other ranks' logs"
        ) from exc


def is_main_process() -> bool:
    """True on global rank 0 (and in a single process). Usable before :func:`init_distributed` (reads the launcher's variables)."""
    if _info is not None:
        return _info.is_main_process
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank() == 0
    return detect().rank == 0
