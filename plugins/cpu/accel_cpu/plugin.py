"""Entry point of the accel-cpu distribution: registers the ``cpu`` backend."""

from __future__ import annotations

from accel_abstraction import hookimpl
from accel_abstraction.registry import BackendSpec


def _factory(settings):  # type: ignore[no-untyped-def]
    from .backend import CpuBackend

    return CpuBackend(settings)


@hookimpl
def accel_register_backends(register):  # type: ignore[no-untyped-def]
    register(BackendSpec("cpu", _factory, priority=0, description="Host CPU (always available)"))
