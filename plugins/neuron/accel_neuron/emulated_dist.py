"""The ``neuron`` collective library for the emulated device: stage to CPU, run gloo, write back.

The real TorchNeuron backend registers a ``torch.distributed`` backend named ``neuron``
for ``neuron`` tensors. The CPU emulation of the device has no interconnect, so
:func:`register_emulated_process_group` registers a stand-in under the same name: a
Python :class:`torch.distributed.ProcessGroup` whose every collective stages its
tensors to the CPU, runs the same collective on an inner gloo group, and writes the
results back into the caller's tensors (:func:`.dist_staging.via_gloo`, the one place that
does it). ``dist.init_process_group("neuron")``, the ``torch.distributed``
functions, ``DistributedDataParallel``, FSDP2, DTensor / tensor parallelism, device
meshes and ``torch.distributed.checkpoint`` then run unchanged on emulated ``neuron``
tensors (CPU tensors pass through as they are).

Reductions: ``SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``, ``BAND``, ``BOR``, ``BXOR`` as
gloo has them, and ``PREMUL_SUM`` (which gloo lacks: each rank's CPU copy is scaled by the
factor, then summed, as NCCL does). A collective that cannot be emulated raises
:class:`UnsupportedCollectiveError` naming it.

Staging costs no copy for contiguous tensors: an emulated neuron tensor's memory is CPU
memory, which gloo reads and writes through a CPU view; non-contiguous tensors are copied
to a contiguous CPU tensor and the result copied back.

Gloo talks over ``127.0.0.1`` (the emulator is a single-machine device), or over the
interface named by ``GLOO_SOCKET_IFNAME`` when that is set. Collectives are synchronous:
the returned ``Work`` is already complete (``wait()`` returns ``True`` at once,
``get_future()`` is done and holds the output tensors), which is what writing back into
device memory needs. Coalescing blocks (``dist._coalescing_manager``) run their
collectives one by one. Timeouts are the process group's
(``init_process_group(timeout=...)``): a peer that has exited makes the collective fail
instead of hang.

Local rank ``r`` uses ``neuron:r`` (as on Trainium, where the device index is ``LOCAL_RANK``):
creating the group makes that device current, unless the process already chose or used
a device (``torch.neuron.is_initialized()``, the rule ``init_device_mesh`` follows too).
With fewer emulated devices than local ranks, ranks share them (``r % device_count``).

This module is the process group (torch calls each collective by its name on the class; each
is a few lines handing its tensors to the staging step) and its registration; the staging
itself is :mod:`accel_neuron.dist_staging`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroupGloo

from .dist_staging import UnsupportedCollectiveError, done, via_gloo

__all__ = ["BACKEND_NAME", "EmulatedProcessGroup", "UnsupportedCollectiveError", "register_emulated_process_group"]

BACKEND_NAME = "neuron"

_lock = threading.Lock()


class EmulatedProcessGroup(dist.ProcessGroup):
    """A process group for emulated-device tensors that delegates to gloo on CPU copies."""

    def __init__(
        self, store: dist.Store, rank: int, size: int, timeout: timedelta, name: str = BACKEND_NAME
    ) -> None:
        super().__init__(rank, size)
        self._name = name
        options = ProcessGroupGloo._Options()
        options._timeout = timeout
        iface = os.environ.get("GLOO_SOCKET_IFNAME")
        device = (
            ProcessGroupGloo.create_device(interface=iface.split(",")[0])
            if iface
            else ProcessGroupGloo.create_device(hostname="127.0.0.1")
        )
        options._devices = [device]
        self._gloo = ProcessGroupGloo(store, rank, size, options)
        self._timeout = timeout
        self._group_name = ""
        self._group_desc = ""

    # -- identity: a Python process group has no C++ backend to keep its name ------------

    def getBackendName(self) -> str:  # noqa: N802 - names fixed by the C++ trampoline
        return self._name

    def getGroupName(self) -> str:  # noqa: N802
        return self._group_name

    def setGroupName(self, name: str) -> None:  # noqa: N802
        self._group_name = name

    def getGroupDesc(self) -> str:  # noqa: N802
        return self._group_desc

    def setGroupDesc(self, desc: str) -> None:  # noqa: N802
        self._group_desc = desc

    # -- the one staging step ---------------------------------------------------------------

    # -- in-place on one list of tensors ----------------------------------------------------

    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts or dist.AllreduceOptions()
        return via_gloo("all_reduce", tensors, tensors, lambda o, _: self._gloo.allreduce(o, opts), opts)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        # gloo's allreduce_coalesced wants dense tensors of one dtype: run them one by one.
        for t in tensors:
            ar = dist.AllreduceOptions()
            if opts is not None:
                ar.reduceOp, ar.timeout = opts.reduceOp, opts.timeout
            self.allreduce([t], ar)
        return done(list(tensors))

    def broadcast(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts or dist.BroadcastOptions()
        return via_gloo("broadcast", tensors, tensors, lambda o, _: self._gloo.broadcast(o, opts))

    def reduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts or dist.ReduceOptions()
        return via_gloo("reduce", tensors, tensors, lambda o, _: self._gloo.reduce(o, opts), opts)

    def barrier(self, opts: Any = None) -> dist.Work:
        """Wait for every rank; ``device_ids`` / ``device`` in ``opts`` are accepted (the barrier runs on the CPU)."""
        bo = dist.BarrierOptions()
        if opts is not None:
            bo.timeout = opts.timeout
        bo.device = torch.device("cpu")
        self._gloo.barrier(bo).wait()
        return done([])

    # -- gathers ------------------------------------------------------------------------------

    def allgather(
        self, output_tensors: list[list[torch.Tensor]], input_tensors: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts or dist.AllgatherOptions()
        return via_gloo(
            "all_gather", output_tensors, input_tensors, lambda o, i: self._gloo.allgather(o, i, opts)
        )

    def allgather_coalesced(
        self, output_lists: list[list[torch.Tensor]], input_list: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        for outs, inp in zip(output_lists, input_list, strict=True):
            self.allgather([outs], [inp], opts)
        return done(output_lists)

    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        opts = opts or dist.AllgatherOptions()
        return via_gloo(
            "all_gather_into_tensor", output, input, lambda o, i: self._gloo._allgather_base(o, i, opts)
        )

    _allgather_base = all_gather_single

    def all_gather_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        for out, inp in zip(outputs, inputs, strict=True):
            self.all_gather_single(out, inp, opts)
        return done(list(outputs))

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def gather(
        self, output_tensors: list[list[torch.Tensor]], input_tensors: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts or dist.GatherOptions()
        return via_gloo("gather", output_tensors, input_tensors, lambda o, i: self._gloo.gather(o, i, opts))

    def scatter(
        self, output_tensors: list[torch.Tensor], input_tensors: list[list[torch.Tensor]], opts: Any = None
    ) -> dist.Work:
        opts = opts or dist.ScatterOptions()
        return via_gloo(
            "scatter", output_tensors, input_tensors, lambda o, i: self._gloo.scatter(o, i, opts)
        )

    # -- reduce-scatters --------------------------------------------------------------------

    def reduce_scatter(
        self, output_tensors: list[torch.Tensor], input_tensors: list[list[torch.Tensor]], opts: Any = None
    ) -> dist.Work:
        opts = opts or dist.ReduceScatterOptions()
        return via_gloo(
            "reduce_scatter", output_tensors, input_tensors, lambda o, i: self._gloo.reduce_scatter(o, i, opts), opts
        )

    def reduce_scatter_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        opts = opts or dist.ReduceScatterOptions()
        return via_gloo(
            "reduce_scatter_tensor", output, input, lambda o, i: self._gloo._reduce_scatter_base(o, i, opts), opts
        )

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        for out, inp in zip(outputs, inputs, strict=True):
            rs = dist.ReduceScatterOptions()
            if opts is not None:
                rs.reduceOp, rs.timeout = opts.reduceOp, opts.timeout
            self.reduce_scatter_single(out, inp, rs)
        return done(list(outputs))

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    # -- all-to-all -------------------------------------------------------------------------

    def all_to_all_single(
        self,
        output: torch.Tensor,
        input: torch.Tensor,
        output_split_sizes: list[int],
        input_split_sizes: list[int],
        opts: Any = None,
    ) -> dist.Work:
        opts = opts or dist.AllToAllOptions()
        return via_gloo(
            "all_to_all_single",
            output,
            input,
            lambda o, i: self._gloo.alltoall_base(o, i, output_split_sizes, input_split_sizes, opts),
        )

    alltoall_base = all_to_all_single

    def alltoall(
        self, output_tensors: list[torch.Tensor], input_tensors: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts or dist.AllToAllOptions()
        return via_gloo(
            "all_to_all", output_tensors, input_tensors, lambda o, i: self._gloo.alltoall(o, i, opts)
        )

    # -- point-to-point ---------------------------------------------------------------------

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int = 0) -> dist.Work:
        return via_gloo("send", [], tensors, lambda _, i: self._gloo.send(i, dst, tag))

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int = 0) -> dist.Work:
        return via_gloo("recv", tensors, tensors, lambda o, _: self._gloo.recv(o, src, tag))

    def recv_anysource(self, tensors: list[torch.Tensor], tag: int = 0) -> dist.Work:
        return via_gloo("recv (any source)", tensors, tensors, lambda o, _: self._gloo.recv_anysource(o, tag))

    # -- coalescing blocks and lifetime -----------------------------------------------------

    def _start_coalescing(self, device: torch.device) -> None:
        """Start a ``_coalescing_manager`` block: its collectives run one by one as they come."""

    def _end_coalescing(self, device: torch.device) -> dist.Work:
        return done([])

    def shutdown(self) -> None:
        """Close the inner gloo group's connections (``destroy_process_group`` calls this)."""
        self._gloo.shutdown()

    def abort(self) -> None:
        self._gloo.abort()

    def split_group(self, *args: Any, **kwargs: Any) -> None:
        raise UnsupportedCollectiveError("split_group", "gloo cannot split a communicator; use dist.new_group(ranks)")


def _bind_local_device(rank: int) -> None:
    """Make ``neuron:LOCAL_RANK`` current when the process has not chosen or used a device yet."""
    mod = getattr(torch, "neuron", None)
    if mod is None or not getattr(mod, "_is_emulated", False) or mod.is_initialized():
        return
    local = int(os.environ.get("LOCAL_RANK", rank))
    mod.set_device(local % mod.device_count())


def register_emulated_process_group(name: str = BACKEND_NAME, devices: Sequence[str] = ("neuron",)) -> bool:
    """Register the emulated collective library with ``torch.distributed`` (idempotent).

    Returns ``True`` when it registered, ``False`` when a backend of that name already
    exists (registered earlier by this function, or by the real TorchNeuron package,
    which is then left alone). ``name`` and ``devices`` exist for tests.
    """
    with _lock:
        if name.lower() in dist.Backend.backend_list:
            return False

        def create(store: dist.Store, rank: int, size: int, timeout: timedelta) -> EmulatedProcessGroup:
            if "neuron" in devices:
                _bind_local_device(rank)
            return EmulatedProcessGroup(store, rank, size, timeout, name.lower())

        dist.Backend.register_backend(name, create, devices=list(devices))
        return True
