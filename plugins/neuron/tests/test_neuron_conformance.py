"""The neuron backend, on the CPU emulation, against the conformance kit."""

from accel_abstraction.testing.conformance import BackendConformance


class TestNeuronEmulatedConformance(BackendConformance):
    backend_name = "neuron"
    env = {"ACCEL_NEURON_EMULATE": "1"}
