"""``nn.DataParallel`` under the redirect: its replicas run one after another on the current device.

DataParallel splits a batch over CUDA devices with ``torch._C._scatter``, ``_gather`` and
``_broadcast_coalesced``, which exist for CUDA only: on any other backend (the emulated
devices, a PrivateUse1 device, the CPU) it fails with ``AttributeError: module 'torch._C'
has no attribute '_scatter'``, or earlier on its device check. Scripts reach it without
asking: ``transformers.Trainer`` wraps the model whenever more than one CUDA device is
visible, as under ``accel run`` on a backend with several devices.

Served here on one device, keeping DataParallel's contract: the inputs are split as
DataParallel splits them (tensors chunked along ``dim`` into as many pieces as it has
device ids, other objects repeated), the module runs on each piece in turn on the device
the script moved it to, and the outputs are gathered as DataParallel gathers them
(concatenated along ``dim``, scalars stacked into a vector). Callers that adjust for
DataParallel (``Trainer`` divides its token count by ``n_gpu`` and averages the per-replica
losses) therefore compute what they compute on GPUs. Gradients accumulate into the one
module, as DataParallel's reduction sums the replicas' (the order of summation differs).
A module that changes its own state in ``forward`` (BatchNorm's running statistics)
updates it once per replica here, where DataParallel keeps replica 0's update.

The site is reported ``one device``: splitting work over emulated devices that share the
host's cores gains nothing, and data parallelism across devices is DistributedDataParallel's
job (``accel run torchrun --nproc-per-node N``).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from .hints import port_hint
from .serve import Server
from .sites import ONE_DEVICE
from .spec import Redirect

__all__ = ["data_parallel_redirects", "gather", "scatter"]

API = "torch.nn.DataParallel"
HINT = port_hint(API)


def scatter(obj: Any, pieces: int, dim: int = 0) -> list[Any]:
    """``obj`` split as ``torch.nn.parallel.scatter`` splits it, every piece left on its device."""
    if isinstance(obj, torch.Tensor):
        return list(obj.chunk(pieces, dim))
    if isinstance(obj, tuple) and hasattr(obj, "_fields") and len(obj) > 0:  # a namedtuple
        return [type(obj)(*args) for args in zip(*(scatter(o, pieces, dim) for o in obj), strict=False)]
    if isinstance(obj, tuple) and len(obj) > 0:
        return list(zip(*(scatter(o, pieces, dim) for o in obj), strict=False))
    if isinstance(obj, list) and len(obj) > 0:
        return [list(i) for i in zip(*(scatter(o, pieces, dim) for o in obj), strict=False)]
    if isinstance(obj, dict) and len(obj) > 0:
        return [type(obj)(i) for i in zip(*(scatter(item, pieces, dim) for item in obj.items()), strict=False)]
    return [obj for _ in range(pieces)]


def gather(outputs: list[Any], dim: int = 0) -> Any:
    """The per-piece ``outputs`` joined as ``torch.nn.parallel.gather`` joins them."""
    out = outputs[0]
    if isinstance(out, torch.Tensor):
        if all(t.dim() == 0 for t in outputs) and dim == 0:
            warnings.warn(
                "Was asked to gather along dimension 0, but all input tensors were scalars; "
                "will instead unsqueeze and return a vector.",
                stacklevel=3,
            )
            return torch.stack(outputs)
        return torch.cat(outputs, dim)
    if out is None:
        return None
    if isinstance(out, dict):
        if not all(len(out) == len(d) for d in outputs):
            raise ValueError("All dicts must have the same number of keys")
        return type(out)((k, gather([d[k] for d in outputs], dim)) for k in out)
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return type(out)._make(gather(list(group), dim) for group in zip(*outputs, strict=False))  # type: ignore[attr-defined]
    return type(out)(map(lambda group: gather(list(group), dim), zip(*outputs, strict=False)))


def data_parallel_redirects(s: Server) -> list[Redirect]:
    from torch.nn.parallel import DataParallel

    rec = s.recorder
    backend = s.backend
    rec.describe(API, "distributed", HINT)

    def __init__(self: Any, module: Any, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:  # noqa: N807
        rec.mark(rec.hit(API), ONE_DEVICE)
        torch.nn.Module.__init__(self)
        self.module = module
        self.dim = dim
        count = len(device_ids) if device_ids else backend.device_count()
        self.device_ids = list(range(count))  # the replicas, as many as DataParallel would make
        self.output_device = backend.current_device()
        self.src_device_obj = backend.device(self.output_device)

    def forward(self: Any, *inputs: Any, **kwargs: Any) -> Any:
        pieces = len(self.device_ids)
        if pieces <= 1:
            return self.module(*inputs, **kwargs)
        split_args = scatter(inputs, pieces, self.dim) if inputs else []
        split_kwargs = scatter(kwargs, pieces, self.dim) if kwargs else []
        n = max(len(split_args), len(split_kwargs), 1)
        split_args += [()] * (n - len(split_args))
        split_kwargs += [{}] * (n - len(split_kwargs))
        with torch.autograd.profiler.record_function("DataParallel.forward"):
            outputs = [self.module(*a, **k) for a, k in zip(split_args, split_kwargs, strict=True)]
        return gather(outputs, self.dim)

    __init__.__doc__ = DataParallel.__init__.__doc__
    forward.__doc__ = DataParallel.forward.__doc__
    return [
        Redirect(DataParallel, "__init__", __init__, "distributed", API, HINT, record=False),
        Redirect(DataParallel, "forward", forward, "distributed", API, HINT, record=False),
    ]
