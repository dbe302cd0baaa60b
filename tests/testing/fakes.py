"""Fake backends for the testing-helper tests: one available ('fakecpu', with streams), one not ('fakeacc')."""

from __future__ import annotations

from accel_abstraction import hookimpl
from accel_abstraction.features import Availability, Capabilities
from accel_abstraction.interface import Backend
from accel_abstraction.registry import BackendSpec

UNAVAILABLE_REASON = "the fake accelerator is unplugged"


class FakeCpu(Backend):
    """Runs on the host CPU but declares streams, so the capability marker has something to tell apart."""

    name = "fakecpu"
    device_type = "cpu"

    def availability(self) -> Availability:
        return Availability.yes()

    def capabilities(self) -> Capabilities:
        return Capabilities(streams=True, bf16=True)

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def set_device(self, device: object) -> None:
        pass

    def manual_seed_all(self, seed: int) -> None:
        import torch

        torch.default_generator.manual_seed(seed)


class FakeAcc(Backend):
    name = "fakeacc"
    device_type = "cpu"

    def availability(self) -> Availability:
        return Availability.no(UNAVAILABLE_REASON, hint="plug it in")


class FakePlugin:
    @hookimpl
    def accel_register_backends(self, register):  # type: ignore[no-untyped-def]
        register(BackendSpec("fakecpu", FakeCpu))
        register(BackendSpec("fakeacc", FakeAcc))


def install() -> None:
    """Load the plugins again with the fakes registered (undo with ``plugins.reset(); runtime.reset()``)."""
    import accel_abstraction.plugins as plugins
    import accel_abstraction.runtime as runtime

    runtime.reset()
    plugins.reset()
    plugins.register_plugin(FakePlugin(), "fake-testing")
