"""accel.is_accelerator_available() answers like torch.accelerator.is_available(): not the host CPU."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="selects backends")

import accel_abstraction as accel  # noqa: E402
from accel_abstraction.features import Capabilities  # noqa: E402
from accel_abstraction.interface import Backend  # noqa: E402


def test_false_on_the_cpu_backend_though_the_backend_is_available() -> None:
    with accel.using("cpu"):
        assert accel.is_available() is True
        assert accel.is_accelerator_available() is False
        assert accel.capabilities().accelerator is False
        assert not accel.capabilities().supports("accelerator")


def test_true_on_the_emulated_neuron_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_NEURON_EMULATE", "1")
    with accel.using("neuron"):
        assert accel.is_accelerator_available() is True
        assert accel.capabilities().supports("accelerator")


def test_a_backend_declares_it_through_its_capabilities_and_must_also_be_available() -> None:
    class Host(Backend):
        name = device_type = "cpu"

        def capabilities(self) -> Capabilities:
            return Capabilities(accelerator=False)

    class Gone(Backend):
        name = device_type = "cpu"

        def is_available(self) -> bool:
            return False

    assert Host().is_accelerator_available() is False
    assert Capabilities().accelerator is True  # a plugin's device is an accelerator unless it says otherwise
    assert Gone().is_accelerator_available() is False
