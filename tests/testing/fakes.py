"""Fake backends for the testing-helper tests: one available ('fakecpu', with streams), one not
('fakeacc'), one available only emulated ('fakeemu')."""

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


EMULATE_VAR = "ACCEL_FAKEEMU_EMULATE"
NO_HARDWARE = "no fake hardware here"


class FakeEmu(Backend):
    """No hardware, but an emulation when ``ACCEL_FAKEEMU_EMULATE=1`` (as accel-neuron offers one)."""

    name = "fakeemu"
    device_type = "cpu"

    def __init__(self, settings: object = None) -> None:
        import os

        super().__init__(settings)  # type: ignore[arg-type]
        self.emulated = os.environ.get(EMULATE_VAR) == "1"  # read when built, like accel-neuron's setting

    def availability(self) -> Availability:
        if self.emulated:
            return Availability.yes()
        return Availability.no(NO_HARDWARE, hint=f"set {EMULATE_VAR}=1 to run on the CPU emulation")


class FakePlugin:
    @hookimpl
    def accel_register_backends(self, register):  # type: ignore[no-untyped-def]
        register(BackendSpec("fakecpu", FakeCpu))
        register(BackendSpec("fakeacc", FakeAcc))
        register(BackendSpec("fakeemu", FakeEmu))


def install() -> None:
    """Load the plugins again with the fakes registered (undo with ``plugins.reset(); runtime.reset()``)."""
    import accel_abstraction.plugins as plugins
    import accel_abstraction.runtime as runtime

    runtime.reset()
    plugins.reset()
    plugins.register_plugin(FakePlugin(), "fake-testing")
