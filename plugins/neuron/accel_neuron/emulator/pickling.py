"""Emulated tensors through ``pickle``, ``torch.save`` (both formats) and ``torch.multiprocessing``.

An emulated storage's bytes live in CPU memory the emulator keeps beside it, which
torch's C++ serializer cannot reach: the legacy ``torch.save`` format (and ``pickle``,
which uses it for storages) writes a non-CPU storage through ``_write_file``, which copies
raw device memory, and loading reads into the device storage the same way. :func:`install`
makes ``_write_file`` of a neuron storage write its CPU copy, and ``_set_from_file`` read
into a CPU storage that is then copied to the device.

``torch.multiprocessing`` queues share CPU tensors through shared memory and refuse
other devices in the queue's feeder thread, where the error is lost and the receiver
waits forever. :func:`install` registers a reduction for tensors on the emulated device:
the receiver gets a copy on the same device, not memory shared with the sender, as for a
device without IPC. The copy travels by value in the queue's message (the tensor's CPU
bytes, written by ``torch.save``): a CPU tensor would be shared through a file descriptor
that the receiver fetches from the sender, which fails with ``ConnectionResetError`` when
the sender has exited in between (seen in CI).
"""

from __future__ import annotations

import io
import threading
from typing import Any

import torch

__all__ = ["install"]

_DEVICE = "neuron"
_lock = threading.Lock()
_done = False


def _write_file(self: torch.UntypedStorage, *args: Any, **kwargs: Any) -> Any:
    if self.device.type == _DEVICE:
        return _REAL_WRITE_FILE(self.cpu(), *args, **kwargs)
    return _REAL_WRITE_FILE(self, *args, **kwargs)


def _set_from_file(self: torch.UntypedStorage, *args: Any, **kwargs: Any) -> Any:
    if self.device.type == _DEVICE:
        cpu = torch.UntypedStorage(self.nbytes())
        _REAL_SET_FROM_FILE(cpu, *args, **kwargs)
        self.copy_(cpu)
        return self
    return _REAL_SET_FROM_FILE(self, *args, **kwargs)


_REAL_WRITE_FILE = torch.UntypedStorage._write_file
_REAL_SET_FROM_FILE = torch.UntypedStorage._set_from_file


def rebuild(data: bytes, device: str, requires_grad: bool) -> torch.Tensor:
    """The receiving side of :func:`_reducer`: the tensor back on ``device`` (installing the emulator)."""
    from .install import install as install_emulator

    install_emulator()
    cpu = torch.load(io.BytesIO(data), weights_only=True)
    out = cpu.to(device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _reducer(original: Any) -> Any:
    def reduce(tensor: torch.Tensor) -> Any:
        if tensor.device.type != _DEVICE:
            return original(tensor)
        if tensor.requires_grad and not tensor.is_leaf:
            raise RuntimeError(
                "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not "
                "support crossing process boundaries.  If you just want to transfer the data, call detach() "
                "on the tensor before serializing (e.g., putting it on the queue)."
            )  # torch's own refusal for CPU and CUDA tensors, word for word
        buffer = io.BytesIO()
        torch.save(tensor.detach().cpu(), buffer)  # by value: nothing to fetch from the sender later
        return (rebuild, (buffer.getvalue(), str(tensor.device), tensor.requires_grad))

    return reduce


def install() -> None:
    """Patch storage writing and register the multiprocessing reduction (idempotent)."""
    global _done
    with _lock:
        if _done:
            return
        torch.UntypedStorage._write_file = _write_file  # type: ignore[method-assign]
        torch.UntypedStorage._set_from_file = _set_from_file  # type: ignore[method-assign]
        from multiprocessing.reduction import ForkingPickler

        import torch.multiprocessing.reductions as reductions

        reductions.init_reductions()  # torch's own first, so ours wraps them
        for cls in (torch.Tensor, torch.nn.parameter.Parameter):
            original = ForkingPickler._extra_reducers.get(cls, reductions.reduce_tensor)
            ForkingPickler.register(cls, _reducer(original))
        _done = True
