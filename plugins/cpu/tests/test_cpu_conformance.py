"""The cpu backend against the conformance kit."""

from accel_abstraction.testing.conformance import BackendConformance


class TestCpuConformance(BackendConformance):
    backend_name = "cpu"
