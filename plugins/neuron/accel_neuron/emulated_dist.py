"""The ``neuron`` collective library for the emulated device: stage to CPU, run gloo, copy back.

The real TorchNeuron backend registers a ``torch.distributed`` backend named ``neuron``
for ``neuron`` tensors. The CPU emulation of the device has no interconnect, so
:func:`register_emulated_process_group` registers a stand-in under the same name: a
Python :class:`torch.distributed.ProcessGroup` whose every collective copies its
tensors to the CPU, runs the same collective on an inner gloo group, and copies the
results back into the caller's tensors. ``dist.init_process_group("neuron")``, the
``torch.distributed`` functions and ``DistributedDataParallel`` then run unchanged on
emulated ``neuron`` tensors (CPU tensors pass through without a copy).

Gloo talks over ``127.0.0.1`` (the emulator is a single-machine device), or over the
interface named by ``GLOO_SOCKET_IFNAME`` when that is set. Collectives are synchronous:
the returned ``Work`` is already complete, which is what a copy back into device memory
needs; ``async_op=True`` callers still get a ``Work`` whose ``wait()`` returns at once.
Timeouts are the process group's (``init_process_group(timeout=...)``): a peer that has
exited makes the collective fail instead of hang.

Local rank ``r`` uses ``neuron:r`` (as on Trainium, where the device index is ``LOCAL_RANK``):
creating the group makes that device current, unless the process already chose or used
a device (``torch.neuron.is_initialized()``, the rule ``init_device_mesh`` follows too).
With fewer emulated devices than local ranks, ranks share them (``r % device_count``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroupGloo, _create_work_from_future

__all__ = ["BACKEND_NAME", "EmulatedProcessGroup", "register_emulated_process_group"]

BACKEND_NAME = "neuron"

_lock = threading.Lock()


def _stage(t: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU tensor with ``t``'s values (``t`` itself when it already is one)."""
    t = t.detach()
    if t.device.type == "cpu" and t.is_contiguous():
        return t
    return t.to("cpu").contiguous()


def _unstage(dst: torch.Tensor, src: torch.Tensor) -> None:
    """Write the CPU result ``src`` back into the caller's tensor ``dst`` (nothing when they are one)."""
    if dst.data_ptr() != src.data_ptr() or dst.device != src.device:
        dst.detach().copy_(src)


def _done(result: Any) -> dist.Work:
    fut: torch.futures.Future[Any] = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


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

    def getBackendName(self) -> str:  # noqa: N802 - name fixed by the C++ trampoline
        return self._name

    # A Python ProcessGroup has no C++ backend to keep its name (PyTorch's getter asks one):
    # keep it here, for DeviceMesh and the functional collectives that look groups up by name.
    def _set_group_name(self, name: str) -> None:
        self._group_name = name

    @property
    def group_name(self) -> str:
        return getattr(self, "_group_name", "")

    # -- one in-place tensor list -------------------------------------------------

    def _inplace(self, op: str, tensors: Sequence[torch.Tensor], *args: Any) -> dist.Work:
        staged = [_stage(t) for t in tensors]
        getattr(self._gloo, op)(staged, *args).wait()
        for t, s in zip(tensors, staged, strict=True):
            _unstage(t, s)
        return _done(list(tensors))

    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        return self._inplace("allreduce", tensors, opts or dist.AllreduceOptions())

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        # gloo's allreduce_coalesced wants dense tensors of one dtype: do them one by one.
        ar = dist.AllreduceOptions()
        if opts is not None:
            ar.reduceOp = opts.reduceOp
            ar.timeout = opts.timeout
        for t in tensors:
            self._inplace("allreduce", [t], ar)
        return _done(list(tensors))

    def broadcast(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        return self._inplace("broadcast", tensors, opts or dist.BroadcastOptions())

    def reduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        return self._inplace("reduce", tensors, opts or dist.ReduceOptions())

    def barrier(self, opts: Any = None) -> dist.Work:
        bo = dist.BarrierOptions()
        if opts is not None:
            bo.timeout = opts.timeout
        self._gloo.barrier(bo).wait()
        return _done([])

    # -- gathers --------------------------------------------------------------------

    def allgather(
        self, output_tensors: list[list[torch.Tensor]], input_tensors: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        outs = [[_stage(t) for t in group] for group in output_tensors]
        ins = [_stage(t) for t in input_tensors]
        self._gloo.allgather(outs, ins, opts or dist.AllgatherOptions()).wait()
        for group, staged in zip(output_tensors, outs, strict=True):
            for t, s in zip(group, staged, strict=True):
                _unstage(t, s)
        return _done(output_tensors)

    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        out, inp = _stage(output), _stage(input)
        self._gloo._allgather_base(out, inp, opts or dist.AllgatherOptions()).wait()
        _unstage(output, out)
        return _done([output])

    _allgather_base = all_gather_single

    def all_gather_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        for out, inp in zip(outputs, inputs, strict=True):
            self.all_gather_single(out, inp, opts)
        return _done(list(outputs))

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def gather(
        self, output_tensors: list[list[torch.Tensor]], input_tensors: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        outs = [[_stage(t) for t in group] for group in output_tensors]
        ins = [_stage(t) for t in input_tensors]
        self._gloo.gather(outs, ins, opts or dist.GatherOptions()).wait()
        for group, staged in zip(output_tensors, outs, strict=True):
            for t, s in zip(group, staged, strict=True):
                _unstage(t, s)
        return _done(output_tensors)

    def scatter(
        self, output_tensors: list[torch.Tensor], input_tensors: list[list[torch.Tensor]], opts: Any = None
    ) -> dist.Work:
        outs = [_stage(t) for t in output_tensors]
        ins = [[_stage(t) for t in group] for group in input_tensors]
        self._gloo.scatter(outs, ins, opts or dist.ScatterOptions()).wait()
        for t, s in zip(output_tensors, outs, strict=True):
            _unstage(t, s)
        return _done(output_tensors)

    # -- reduce-scatters ----------------------------------------------------------------

    def reduce_scatter(
        self, output_tensors: list[torch.Tensor], input_tensors: list[list[torch.Tensor]], opts: Any = None
    ) -> dist.Work:
        outs = [_stage(t) for t in output_tensors]
        ins = [[_stage(t) for t in group] for group in input_tensors]
        self._gloo.reduce_scatter(outs, ins, opts or dist.ReduceScatterOptions()).wait()
        for t, s in zip(output_tensors, outs, strict=True):
            _unstage(t, s)
        return _done(output_tensors)

    def reduce_scatter_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        out, inp = _stage(output), _stage(input)
        self._gloo._reduce_scatter_base(out, inp, opts or dist.ReduceScatterOptions()).wait()
        _unstage(output, out)
        return _done([output])

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        for out, inp in zip(outputs, inputs, strict=True):
            self.reduce_scatter_single(out, inp, opts)
        return _done(list(outputs))

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    # -- all-to-all and point-to-point -----------------------------------------------------

    def all_to_all_single(
        self,
        output: torch.Tensor,
        input: torch.Tensor,
        output_split_sizes: list[int],
        input_split_sizes: list[int],
        opts: Any = None,
    ) -> dist.Work:
        out, inp = _stage(output), _stage(input)
        self._gloo.alltoall_base(
            out, inp, output_split_sizes, input_split_sizes, opts or dist.AllToAllOptions()
        ).wait()
        _unstage(output, out)
        return _done([output])

    alltoall_base = all_to_all_single

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int = 0) -> dist.Work:
        self._gloo.send([_stage(t) for t in tensors], dst, tag).wait()
        return _done([])

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int = 0) -> dist.Work:
        staged = [_stage(t) for t in tensors]
        self._gloo.recv(staged, src, tag).wait()
        for t, s in zip(tensors, staged, strict=True):
            _unstage(t, s)
        return _done(list(tensors))


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
