"""Staging for the emulated ``neuron`` collectives: tensors to the CPU, gloo on them, results back.

:func:`via_gloo` is the one place an emulated collective touches tensors: it stages the outputs
and inputs (:func:`stage`: a contiguous emulated neuron tensor is handed to gloo as a CPU view
of its own memory, no copy; anything else is copied), runs the gloo collective on the CPU
tensors, and writes the results back where a copy was made. ``PREMUL_SUM`` (which gloo lacks)
becomes a ``SUM`` of the inputs scaled by its factor, as NCCL computes it. A collective gloo
cannot run raises :class:`UnsupportedCollectiveError` naming it. Used by
:class:`accel_neuron.emulated_dist.EmulatedProcessGroup`, whose every collective hands its
tensors here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future
from torch.utils._pytree import tree_flatten

from accel_abstraction.distributed import DistributedError
from accel_abstraction.errors import headline

_PREMUL_SUM = dist.ReduceOp.RedOpType.PREMUL_SUM
#: How gloo words "this collective / reduction / dtype is not implemented" (lower case).
_GLOO_CANNOT = ("not supported", "does not support", "cannot use", "unsupported", "invalid scalar type")


class UnsupportedCollectiveError(DistributedError, NotImplementedError):
    """The emulated process group cannot run this collective (or this reduction); ``collective`` names it."""

    def __init__(self, collective: str, why: str) -> None:
        super().__init__(
            f"the emulated 'neuron' process group does not support {collective}: {why}. "
            "It stages tensors to the CPU and runs gloo; use a collective gloo has, or run on "
            "Trainium's native 'neuron' backend (see docs/distributed.md)"
        )
        self.collective = collective


def stage(t: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU tensor with ``t``'s values, sharing ``t``'s memory where it can.

    A contiguous CPU tensor is ``t`` itself. An emulated neuron tensor's memory is CPU
    memory: a contiguous one is handed to gloo as a CPU view of that memory (no copy,
    the storage path's ``fresh_cpu_view``), so the group moves what gloo moves. Anything
    else (non-contiguous) is copied.
    """
    t = t.detach()
    if t.is_contiguous():
        if t.device.type == "cpu":
            return t
        if t.device.type == "neuron" and getattr(torch.neuron, "_is_emulated", False):  # type: ignore[attr-defined]
            from .emulator import storage

            return storage.active().fresh_cpu_view(t)
    return t.to("cpu").contiguous()


def done(result: Any) -> dist.Work:
    """A completed ``Work`` whose future holds ``result``."""
    fut: torch.futures.Future[Any] = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _restage(tree: Any, staged: dict[int, torch.Tensor]) -> Any:
    """``tree`` (a tensor, or nested lists of them) with every tensor replaced by its CPU copy."""
    if isinstance(tree, torch.Tensor):
        return staged[id(tree)]
    if isinstance(tree, list | tuple):
        return [_restage(x, staged) for x in tree]
    return tree


def via_gloo(
    collective: str,
    outputs: Any,
    inputs: Any,
    run: Callable[[Any, Any], dist.Work | None],
    opts: Any = None,
) -> dist.Work:
    """Stage ``outputs`` and ``inputs`` (tensors or nested lists) to the CPU, ``run`` gloo on them, write back.

    ``inputs is outputs`` (the same object) for in-place collectives. A ``PREMUL_SUM``
    in ``opts.reduceOp`` becomes a ``SUM`` of the inputs scaled by its factor. Returns
    a completed ``Work`` whose future holds ``outputs``.
    """
    reduce_op = getattr(opts, "reduceOp", None)
    premul = reduce_op is not None and reduce_op.op == _PREMUL_SUM
    staged: dict[int, torch.Tensor] = {}
    for t in _tensors(outputs):
        staged[id(t)] = stage(t)
    for t in _tensors(inputs):
        if id(t) not in staged:
            s = stage(t)
            # PREMUL_SUM scales the inputs: never the caller's own input tensor.
            staged[id(t)] = s.clone() if premul and s.data_ptr() == t.data_ptr() else s
    if premul:
        factor = _premul_factor(reduce_op, collective)
        for t in _tensors(inputs):
            staged[id(t)].mul_(factor)
        opts.reduceOp = dist.ReduceOp.SUM
    try:
        work = run(_restage(outputs, staged), _restage(inputs, staged))
        if work is not None:
            work.wait()
    except RuntimeError as exc:
        low = str(exc).lower()
        if any(s in low for s in _GLOO_CANNOT):
            raise UnsupportedCollectiveError(collective, headline(exc)) from exc
        raise
    for t in _tensors(outputs):
        s = staged[id(t)]
        if t.data_ptr() != s.data_ptr():  # a copy, not the tensor's own memory
            t.detach().copy_(s)
    return done(outputs if isinstance(outputs, list) else [outputs])


def _premul_factor(op: dist.ReduceOp, collective: str) -> float | torch.Tensor:
    """The scale factor of a ``PREMUL_SUM`` reduction (a float, or a one-element CPU tensor)."""
    factor = op.factor
    if factor is None:
        raise UnsupportedCollectiveError(f"{collective} with ReduceOp.PREMUL_SUM", "the reduction carries no factor")
    return factor.detach().cpu() if isinstance(factor, torch.Tensor) else float(factor)

