"""Stream bookkeeping ops on the emulated device: ``record_stream``.

``Tensor.record_stream(stream)`` tells a caching allocator not to reuse the tensor's block
until the work queued on ``stream`` is done. The emulated device runs every op at once, in
order (its streams order nothing), so a freed block can be reused at once: the op has
nothing to do. Without a kernel it reached the fallback, which has no CPU kernel to call
(``NotImplementedError: Could not run 'aten::record_stream' ... 'CPU' backend``), and
``DistributedDataParallel`` calls it whenever it copies inputs from another device of the
accelerator on a side stream (``torch.distributed.utils._recursive_to``): a DDP model on
``neuron:1`` fed a batch on ``neuron:0`` failed in its first forward.
"""

from __future__ import annotations

import torch


def _record_stream(self: torch.Tensor, stream: torch.Stream) -> None:
    return None


def register(lib: torch.library.Library) -> None:
    """Register the kernels on the ``aten`` IMPL library ``lib`` at the PrivateUse1 key."""
    lib.impl("record_stream", _record_stream, "PrivateUse1")
