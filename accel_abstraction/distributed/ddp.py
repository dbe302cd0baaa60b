"""What ``DistributedDataParallel`` takes as ``device_ids`` and ``output_device``, and
``FullyShardedDataParallel`` as ``device_id``, on the selected backend.

DDP wants the index of this process's device where devices have indices (``cuda:3`` ->
``[3]``, ``neuron:1`` -> ``[1]``) and *no* ids for a CPU module: ``device_ids=[0]`` there
stops it ("device_ids can only be None or contain a single element" / "DistributedDataParallel
device_ids and output_device arguments only work with single-device/multiple-device GPU
modules or CPU modules, but got device_ids [0], output_device 0, and module parameters
{device(type='cpu')}"). A backend whose devices carry no index (``accel.device(0)`` is
``cpu``) therefore gets ``None``.

One rule for both porting tools: ``accel port`` rewrites ``DDP(m, device_ids=[rank],
output_device=rank)`` to ``device_ids=accel.ddp_device_ids(rank),
output_device=accel.ddp_output_device(rank)``, and ``accel run``'s redirect of
``DistributedDataParallel.__init__`` answers with :func:`device_ids_for` /
:func:`output_device_for`, so a ported script and an unchanged one under ``accel run`` pass
DDP the same arguments.

FSDP takes a device: ``device_id=rank`` is ``torch.device(rank)``, the CUDA device ``rank`` on
a CUDA machine; on a machine without an accelerator it stops ("Cannot access accelerator
device when none is available"), and so does ``device_id=None`` for a CPU module ("FSDP needs
a non-CPU accelerator device", torch 2.13); ``device_id=torch.device("cpu")`` runs.
:func:`fsdp_device_id` is therefore the backend's device for the index where devices have
indices and ``cpu`` on the cpu backend, whatever the rank (one CPU device per process).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from ..interface import Backend, DeviceLike

__all__ = ["ddp_device_ids", "ddp_output_device", "device_ids_for", "fsdp_device_id", "fsdp_device_id_for", "output_device_for"]

#: Turns one ``device_ids`` entry into the backend's device (default: ``backend.device``).
ToDevice = Callable[[Any], "torch.device"]


def _indexed(backend: Backend) -> bool:
    """Whether the backend's devices carry an index DDP can take (not the CPU's)."""
    return backend.device(0).index is not None


def device_ids_for(backend: Backend, devices: Sequence[Any], to_device: ToDevice | None = None) -> list[int] | None:
    """``device_ids`` for DDP on ``backend``: the indices of ``devices`` (none given: the current device).

    ``None`` where the backend's devices have no index (cpu), whatever ``devices`` hold: a
    rank number there names a process, not a device. ``to_device`` converts each entry
    (the runtime redirect passes its CUDA-to-backend translation).
    """
    if not _indexed(backend):
        return None
    if not devices:
        return [backend.current_device()]
    convert = to_device or backend.device
    indices = [convert(d).index for d in devices]
    return [backend.current_device() if i is None else i for i in indices]


def output_device_for(backend: Backend, device: Any = None, to_device: ToDevice | None = None) -> int | None:
    """``output_device`` for DDP on ``backend``: the index of ``device`` (``None``: the current one); ``None`` on cpu."""
    ids = device_ids_for(backend, () if device is None else (device,), to_device)
    return None if ids is None else ids[0]


def fsdp_device_id_for(backend: Backend, device: Any = None, to_device: ToDevice | None = None) -> torch.device:
    """``device_id`` for FSDP on ``backend``: the backend's device of ``device`` (``None``: the current one); ``cpu`` on cpu."""
    index = output_device_for(backend, device, to_device)
    return backend.device() if index is None else backend.device(index)


def ddp_device_ids(*devices: DeviceLike) -> list[int] | None:
    """``device_ids`` for ``DistributedDataParallel`` on the selected backend.

    ``accel.ddp_device_ids(local_rank)`` is ``[local_rank]`` on cuda and neuron and ``None``
    on cpu, where DDP takes no ids; without arguments, the current device's index.
    """
    from ..runtime import current

    return device_ids_for(current(), devices)


def ddp_output_device(device: DeviceLike = None) -> int | None:
    """``output_device`` for ``DistributedDataParallel``: the index of ``device`` (default: current), ``None`` on cpu."""
    from ..runtime import current

    return output_device_for(current(), device)


def fsdp_device_id(device: DeviceLike = None) -> torch.device:
    """``device_id`` for ``FullyShardedDataParallel`` on the selected backend.

    ``accel.fsdp_device_id(local_rank)`` is ``cuda:<local_rank>`` on cuda (what ``device_id=local_rank``
    meant there), ``neuron:<local_rank>`` on neuron and ``cpu`` on the cpu backend, where FSDP
    refuses an index and ``None``; without arguments, the current device.
    """
    from ..runtime import current

    return fsdp_device_id_for(current(), device)
