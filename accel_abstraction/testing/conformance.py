"""The conformance kit: the behaviour every backend owes the public API, as pytest tests.

A plugin runs it against its backend by subclassing :class:`BackendConformance` in one of
its test modules::

    from accel_abstraction.testing.conformance import BackendConformance

    class TestMyBackend(BackendConformance):
        backend_name = "mydev"
        env = {"ACCEL_MYDEV_SOMETHING": "1"}   # optional

Each test selects the backend with ``accel.using(backend_name)`` and checks types and
semantics: device objects, RNG reproducibility, memory statistics that move with real
allocations, autocast dtypes, GradScaler state, and that every undeclared feature raises
:class:`~accel_abstraction.errors.CapabilityError`. If the backend is not available the
tests skip with the plugin's own reason.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import ClassVar

import pytest
import torch

import accel_abstraction as accel
from accel_abstraction.emulation import unavailable_message
from accel_abstraction.errors import AccelError, CapabilityError, DeviceIndexError
from accel_abstraction.interface import Backend

__all__ = ["BackendConformance"]

_MIB = 1 << 20


class BackendConformance:
    """Mix-in test class; set :attr:`backend_name` (and :attr:`env` if the backend needs it)."""

    backend_name: ClassVar[str] = ""
    env: ClassVar[dict[str, str]] = {}

    @pytest.fixture
    def backend(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)
        from accel_abstraction.plugins import get_host
        from accel_abstraction.selection import build_backend, probe

        entry = get_host().registry.get(self.backend_name)
        avail = probe(build_backend(entry, None), entry)
        if not avail.available:
            pytest.skip(unavailable_message(self.backend_name, avail.reason, avail.hint))
        with accel.using(self.backend_name) as selected:
            yield selected

    # ------------------------------------------------------------------ identity

    def test_identity(self, backend: Backend) -> None:
        assert accel.backend() is backend
        assert isinstance(backend.name, str) and backend.name
        assert accel.device_type() == backend.device_type
        dev = accel.device()
        assert isinstance(dev, torch.device) and dev.type == backend.device_type
        assert accel.device() is dev, "device() must return a cached object"
        count = accel.device_count()
        assert isinstance(count, int) and count >= 1
        current = accel.current_device()
        assert isinstance(current, int) and 0 <= current < count
        assert accel.device(0).type == backend.device_type and accel.device(0).index in (0, None)
        assert accel.device(f"{backend.device_type}:0") == accel.device(0)
        assert accel.device(torch.device(backend.device_type, 0)) == accel.device(0)
        accel.set_device(current)
        assert accel.current_device() == current
        assert isinstance(accel.device_name(), str)

    def test_bad_device_arguments(self, backend: Backend) -> None:
        with pytest.raises(DeviceIndexError, match="out of range"):
            accel.device(-1)
        with pytest.raises(DeviceIndexError, match="out of range"):
            accel.device(accel.device_count())
        other = "meta" if backend.device_type != "meta" else "cpu"
        with pytest.raises(AccelError, match="is not a"):
            accel.device(f"{other}:0")

    def test_an_indexed_device_is_what_tensors_on_it_report(self, backend: Backend) -> None:
        """``accel.device(0)`` works wherever PyTorch takes a device, ``map_location`` included."""
        dev = accel.device(0)
        x = torch.empty(2, device=dev)
        assert x.device == dev, "accel.device(0) must equal the device of a tensor made on it"
        assert torch.arange(3).to(dev).device == dev
        buffer = io.BytesIO()
        torch.save({"w": torch.arange(3.0)}, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, map_location=dev)
        assert loaded["w"].device == dev and loaded["w"].cpu().tolist() == [0.0, 1.0, 2.0]

    def test_tensors_land_on_the_device(self, backend: Backend) -> None:
        x = torch.arange(6, dtype=torch.float32, device=accel.device()).reshape(2, 3)
        assert x.device.type == backend.device_type
        y = (x * 2).sum(dim=1)
        accel.synchronize()
        assert y.cpu().tolist() == [6.0, 24.0]

    # ------------------------------------------------------------------ execution

    def test_streams_and_events(self, backend: Backend) -> None:
        caps = accel.capabilities()
        if caps.streams:
            s = accel.current_stream()
            assert s is not None
            with accel.stream(s):
                torch.ones(1, device=accel.device()).add_(1)
            with accel.stream(accel.Stream()):
                torch.ones(1, device=accel.device()).add_(1)
        else:
            with pytest.raises(CapabilityError):
                accel.current_stream()
            with pytest.raises(CapabilityError):
                accel.Stream()
        if caps.events:
            assert accel.Event() is not None
        else:
            with pytest.raises(CapabilityError):
                accel.Event()

    # ------------------------------------------------------------------ memory

    def test_memory_stats_follow_allocations(self, backend: Backend) -> None:
        if not accel.capabilities().memory_stats:
            for fn in (accel.memory_allocated, accel.max_memory_allocated, accel.memory_reserved, accel.memory_stats):
                with pytest.raises(CapabilityError):
                    fn()
            return
        if accel.capabilities().memory_source == "process":
            self._process_memory_follows_allocations()
            return
        before = accel.memory_allocated()
        assert isinstance(before, int) and before >= 0
        x = torch.empty(4 * _MIB, dtype=torch.uint8, device=accel.device())
        during = accel.memory_allocated()
        assert during - before >= 4 * _MIB, (before, during)
        assert accel.max_memory_allocated() >= during
        assert isinstance(accel.memory_stats(), dict)
        assert isinstance(accel.memory_reserved(), int)
        del x
        after = accel.memory_allocated()
        assert after <= during - 4 * _MIB, (during, after)
        accel.reset_peak_memory_stats()
        assert accel.max_memory_allocated() == accel.memory_allocated()

    def _process_memory_follows_allocations(self) -> None:
        """Statistics of the process's resident memory: they move with memory actually written."""
        size = 64 * _MIB  # above glibc's largest mmap threshold: freeing it returns the pages to the system
        before = accel.memory_allocated()
        assert isinstance(before, int) and before > 0
        x = torch.ones(size, dtype=torch.uint8, device=accel.device())  # written: resident
        during = accel.memory_allocated()
        assert during - before >= size * 9 // 10, (before, during)
        assert accel.max_memory_allocated() >= during
        stats = accel.memory_stats()
        assert stats["allocated_bytes.all.peak"] >= during
        assert accel.memory_reserved() >= during - _MIB
        del x
        after = accel.memory_allocated()
        assert after <= during - size * 9 // 10, (during, after)
        assert accel.max_memory_allocated() >= during  # the peak stays until reset
        accel.reset_peak_memory_stats()
        peak, now = accel.max_memory_allocated(), accel.memory_allocated()
        assert now - _MIB <= peak < during - size // 2, (peak, now, during)  # restarted at the current size
        free, total = accel.mem_get_info()
        assert 0 < free <= total

    # ------------------------------------------------------------------ RNG

    def test_manual_seed_reproduces(self, backend: Backend) -> None:
        dev = accel.device()
        accel.manual_seed(1234)
        a = torch.rand(16, device=dev)
        accel.manual_seed(1234)
        b = torch.rand(16, device=dev)
        assert torch.equal(a.cpu(), b.cpu())
        accel.manual_seed_all(99)
        c = torch.rand(16, device=dev)
        assert not torch.equal(a.cpu(), c.cpu())

    def test_rng_state_round_trip(self, backend: Backend) -> None:
        dev = accel.device()
        accel.manual_seed(7)
        state = accel.get_rng_state()
        assert isinstance(state, torch.Tensor) and state.dtype == torch.uint8
        first = torch.randn(32, device=dev).cpu()
        accel.set_rng_state(state)
        again = torch.randn(32, device=dev).cpu()
        assert torch.equal(first, again)
        states = accel.get_rng_state_all()
        assert len(states) == accel.device_count()

    def test_fork_rng_restores(self, backend: Backend) -> None:
        dev = accel.device()
        accel.manual_seed(3)
        expected = torch.rand(8, device=dev).cpu()
        accel.manual_seed(3)
        with accel.fork_rng():
            torch.rand(100, device=dev)
            torch.rand(100)
        assert torch.equal(torch.rand(8, device=dev).cpu(), expected)

    # ------------------------------------------------------------------ AMP

    def test_autocast_uses_the_declared_dtype(self, backend: Backend) -> None:
        dtype = backend.default_amp_dtype
        assert dtype in accel.supported_dtypes()
        a = torch.randn(8, 8, device=accel.device())
        with accel.autocast():
            out = a @ a
        assert out.dtype == dtype
        with accel.autocast(enabled=False):
            assert (a @ a).dtype == torch.float32

    def test_grad_scaler_matches_amp_dtype(self, backend: Backend) -> None:
        scaler = accel.GradScaler()
        assert isinstance(scaler, torch.amp.GradScaler)
        assert scaler._device == backend.device_type
        assert scaler.is_enabled() == (backend.default_amp_dtype == torch.float16)

    def test_fp16_amp_enables_the_scaler(self, backend: Backend) -> None:
        if not accel.is_fp16_supported():
            pytest.skip(f"{backend.name} has no float16")
        with accel.using(self.backend_name, amp_dtype="float16"):
            assert accel.GradScaler().is_enabled()
            a = torch.randn(4, 4, device=accel.device())
            with accel.autocast():
                assert (a @ a).dtype == torch.float16

    def test_dtype_support_is_consistent(self, backend: Backend) -> None:
        assert isinstance(accel.is_bf16_supported(), bool)
        assert accel.is_bf16_supported() == (torch.bfloat16 in accel.supported_dtypes())
        assert accel.capabilities().bf16 == accel.is_bf16_supported()

    # ------------------------------------------------------------------ knobs, distributed, data

    def test_deterministic_knob(self, backend: Backend) -> None:
        try:
            accel.set_deterministic(True)
            assert torch.are_deterministic_algorithms_enabled()
        finally:
            accel.set_deterministic(False)
        assert not torch.are_deterministic_algorithms_enabled()
        accel.set_benchmark(False)  # declared no-ops where unsupported: must not raise
        accel.set_allow_tf32(False)

    def test_distributed_names(self, backend: Backend) -> None:
        name = accel.dist_backend()
        assert isinstance(name, str) and name
        if accel.capabilities().visible_devices:
            assert accel.visible_devices_env().isupper()
        else:
            with pytest.raises(CapabilityError):
                accel.visible_devices_env()

    def test_pin_memory(self, backend: Backend) -> None:
        t = torch.ones(4)
        if accel.capabilities().pinned_memory:
            assert accel.pin_memory(t).is_pinned()
            assert accel.pin_memory_device() == backend.device_type
        else:
            with pytest.raises(CapabilityError):
                accel.pin_memory(t)

    def test_accelerator_predicate_follows_the_declared_capability(self, backend: Backend) -> None:
        # what `accel port` writes for torch.cuda.is_available(): False exactly where the device is the host CPU
        answer = accel.is_accelerator_available()
        assert answer is (accel.capabilities().accelerator and backend.is_available())

    def test_undeclared_features_raise(self, backend: Backend) -> None:
        caps = accel.capabilities()
        assert caps.supports("no-such-feature") is False
        missing = [f for f in caps.known_features() if not caps.supports(f)]
        for feature in missing:
            with pytest.raises(CapabilityError, match=backend.name):
                backend.require(feature)
