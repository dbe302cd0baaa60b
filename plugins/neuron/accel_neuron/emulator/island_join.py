"""An island whose CPU graph joins the device's (the recurrent layers of :mod:`.cpu_islands`).

Where the storage path can share a version counter (the C++ core's, ``share_version``), the CPU
graph joins the device's own: each input that requires grad enters it as a CPU copy made by
autograd's own ``copy_``/``_to_copy`` (its backward hands the gradient back to the device), each output
that requires grad leaves it the same way, and the one engine run of the caller's backward runs
both, with no Python between them (an island's fwd+bwd of a small ``nn.RNN`` took 2x the CPU's
through an autograd Function and a second engine run). The copies count their versions with their
neuron inputs, so an in-place change of an input after forward fails backward as on the CPU;
double backward, retain_graph and saved-tensor hooks are autograd's own. Under forward-mode AD and
functorch transforms, and on the Python storage path, the island is :mod:`.cpu_islands`' autograd
Function (:func:`joinable` says which). With the compiled per-op path, ``csrc/islands.cpp`` runs this
forward (and the island without autograd) in C++, crossing over the tensors' memory instead of by copies.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.autograd.forward_ad as fwAD

from . import devices

_Tensor = torch.Tensor
_CPU = torch.device("cpu")
_has_internal_overlap = torch._debug_has_internal_overlap
_functorch_active = torch._C._are_functorch_transforms_active


def _cpu_copy(t: _Tensor, share_version: Any) -> _Tensor:
    """Neuron tensor `t` (requiring grad) as the CPU graph's input: a copy with its strides, recorded by
    autograd (backward hands the gradient to `t` on its device), counting versions with `t`."""
    if t.is_contiguous() or _has_internal_overlap(t) == 1:  # 1: overlapping (expanded): dense copy
        c = t.to(_CPU)
    else:  # gaps (a slice with a step): the same strides, as the CPU op would see them
        c = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype).copy_(t)
    share_version(c, t)
    return c


def forward(call: Any, path: Any) -> list:
    """An island's forward whose CPU graph joins the device's (module docstring): `call` is
    a ``cpu_islands._Call``, `path` the active storage path; the results as neuron tensors, those that
    require grad through autograd's own copies."""
    view = path.fresh_cpu_view
    share = path.share_version
    cpu_in = [
        t if t.device.type != "neuron" else _cpu_copy(t, share) if t.requires_grad else view(t) for t in call.tensors
    ]
    flat = call.run_cpu(cpu_in)
    to_neuron, index = path.to_neuron, call.index
    device = devices.DEVICES[index]
    return [
        (c.to(device) if c.requires_grad else to_neuron(c, index)) if isinstance(c, _Tensor) else c for c in flat
    ]


def joinable(path: Any) -> bool:
    """Whether an island's CPU graph can join the device's here (module docstring)."""
    # forward-mode AD's level (-1 outside dual_level; a release without the attribute: none seen)
    return path.share_version is not None and getattr(fwAD, "_current_level", -1) < 0 and not _functorch_active()
