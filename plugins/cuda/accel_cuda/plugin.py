"""Entry point of the accel-cuda distribution: registers the ``cuda`` backend."""

from __future__ import annotations

from accel_abstraction import hookimpl
from accel_abstraction.registry import BackendSpec


def _factory(settings):  # type: ignore[no-untyped-def]
    from .backend import CudaBackend

    return CudaBackend(settings)


@hookimpl
def accel_register_backends(register):  # type: ignore[no-untyped-def]
    register(BackendSpec("cuda", _factory, priority=100, aliases=("gpu",), description="NVIDIA GPUs (torch.cuda)"))
