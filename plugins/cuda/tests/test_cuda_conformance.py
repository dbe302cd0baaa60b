"""The cuda backend against the conformance kit (skipped with the reason where no GPU is usable)."""

from accel_abstraction.testing.conformance import BackendConformance


class TestCudaConformance(BackendConformance):
    backend_name = "cuda"
