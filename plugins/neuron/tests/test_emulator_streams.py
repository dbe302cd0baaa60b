"""Streams of the emulated device, as PyTorch's C++ side, torch.accelerator and accel see them.

The emulator runs ops synchronously, so streams order nothing; but a stream is a stream: two
streams differ, the current one (per device, per thread) is one state that ``torch.neuron``,
``torch.accelerator``, ``with torch.Stream(...)``, accel's API and the autograd engine all read
and write (``emulator/device_streams.py``, ``emulator/csrc/device_guard.cpp``). Before, the C++
guard answered the default stream for every question, so ``torch.Stream(device="neuron")`` twice
gave equal streams (on device index -1), ``torch.accelerator.set_stream`` failed, and the engine
never gave CUDA's AccumulateGrad stream-mismatch warning.
"""

from __future__ import annotations

import threading
import time
import warnings

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron_emulator")

MISMATCH = "set_warn_on_accumulate_grad_stream_mismatch"  # named in the engine's warning


@pytest.fixture(autouse=True)
def _default_streams_after():
    yield
    for i in range(torch.neuron.device_count()):  # type: ignore[attr-defined]
        torch.neuron.set_stream(torch.neuron.default_stream(i))  # type: ignore[attr-defined]
    torch.neuron.set_device(0)  # type: ignore[attr-defined]


def test_two_streams_are_two_streams() -> None:
    a, b = torch.Stream(device="neuron"), torch.Stream(device="neuron")
    n = torch.neuron.Stream()  # type: ignore[attr-defined]
    default = torch.neuron.default_stream()  # type: ignore[attr-defined]
    assert len({a.stream_id, b.stream_id, n.stream_id, default.stream_id}) == 4
    assert a != b and a != n and n != default
    assert a.device == n.device == torch.device("neuron:0")  # the current device, not index -1
    assert torch.accelerator.current_stream() == default == torch.neuron.current_stream()  # type: ignore[attr-defined]


def test_current_stream_round_trips_through_torch_accelerator() -> None:
    side = torch.neuron.Stream()  # type: ignore[attr-defined]
    torch.neuron.set_stream(side)  # type: ignore[attr-defined]
    assert torch.accelerator.current_stream() == side
    torch.accelerator.set_stream(torch.Stream(device="neuron"))
    other = torch.accelerator.current_stream()
    assert torch.neuron.current_stream() == other != side  # type: ignore[attr-defined]
    torch.accelerator.set_stream(torch.neuron.default_stream())  # type: ignore[attr-defined]
    assert torch.neuron.current_stream() == torch.neuron.default_stream()  # type: ignore[attr-defined]


def test_stream_contexts_agree() -> None:
    s = torch.Stream(device="neuron")
    with s:
        assert torch.neuron.current_stream() == s  # type: ignore[attr-defined]
        x = torch.ones(3, device="neuron") * 2
    n = torch.neuron.Stream()  # type: ignore[attr-defined]
    with torch.neuron.stream(n):  # type: ignore[attr-defined]
        assert torch.accelerator.current_stream() == n
        assert torch.neuron.current_stream() is n  # type: ignore[attr-defined]
    assert torch.accelerator.current_stream() == torch.neuron.default_stream()  # type: ignore[attr-defined]
    assert x.cpu().tolist() == [2.0, 2.0, 2.0]


def test_current_stream_is_per_device_and_per_thread() -> None:
    if torch.neuron.device_count() < 2:  # type: ignore[attr-defined]
        pytest.skip("needs two emulated devices")
    on_one = torch.neuron.Stream(1)  # type: ignore[attr-defined]
    with torch.neuron.stream(on_one):  # type: ignore[attr-defined]
        assert torch.accelerator.current_stream(1) == on_one
        assert torch.accelerator.current_stream(0) == torch.neuron.default_stream(0)  # type: ignore[attr-defined]
        seen: list[torch.Stream] = []
        worker = threading.Thread(target=lambda: seen.append(torch.accelerator.current_stream(1)))
        worker.start()
        worker.join()
        assert seen == [torch.neuron.default_stream(1)]  # type: ignore[attr-defined]


def test_accel_api_and_torch_agree(neuron_selected: torch.device) -> None:
    import accel_abstraction as accel

    side = accel.Stream()
    assert side != accel.current_stream()
    with accel.stream(side):
        assert torch.accelerator.current_stream() == side == accel.current_stream()
    with torch.Stream(device="neuron") as s:
        assert accel.current_stream() == s
    assert accel.current_stream() == torch.accelerator.current_stream() == torch.neuron.default_stream()  # type: ignore[attr-defined]


def _accumulate_grad_warns(keep_grad_acc: bool) -> bool:
    """What PyTorch's test_warn_on_accumulate_grad_stream_mismatch_flag checks, on neuron."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.Stream(device="neuron") as s0:
            a = torch.ones(8, 8, device="neuron", requires_grad=True)
            kept = a.clone() if keep_grad_acc else None  # its AccumulateGrad node made under s0
        with torch.Stream(device="neuron") as s1:
            s1.wait_stream(s0)
            c = a.sum()
        c.backward()  # across streams the engine records and waits on events: the gradient is still right
        assert torch.equal(a.grad.cpu(), torch.ones(8, 8))
        del kept
    return any(MISMATCH in str(w.message) for w in caught)


def test_accumulate_grad_stream_mismatch_warns_as_on_cuda() -> None:
    assert torch._C._warn_on_accumulate_grad_stream_mismatch()
    old = torch._C._get_warnAlways()
    torch._C._set_warnAlways(True)  # the engine's warning is TORCH_WARN_ONCE
    try:
        assert _accumulate_grad_warns(keep_grad_acc=True)
        assert not _accumulate_grad_warns(keep_grad_acc=False)  # made again under s1: no mismatch
        torch.autograd.graph.set_warn_on_accumulate_grad_stream_mismatch(False)
        try:
            assert not _accumulate_grad_warns(keep_grad_acc=True)
        finally:
            torch.autograd.graph.set_warn_on_accumulate_grad_stream_mismatch(True)
    finally:
        torch._C._set_warnAlways(old)


def test_torch_events_on_the_device() -> None:
    start = torch.Event(device="neuron", enable_timing=True)
    end = torch.Event(device="neuron", enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record(torch.Stream(device="neuron"))
    end.synchronize()
    assert start.query() and end.query()
    assert 15 <= start.elapsed_time(end) < 2000
    untimed = torch.Event(device="neuron")
    untimed.record()
    with pytest.raises(ValueError, match="enable_timing=True"):  # PyTorch's check, as on CUDA
        untimed.elapsed_time(end)
    plain = torch.accelerator.current_stream()  # a plain torch.Stream: the base class's methods
    plain.wait_stream(torch.Stream(device="neuron"))
    assert plain.query() and plain.record_event().query()
