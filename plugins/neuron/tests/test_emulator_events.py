"""Events of the emulated device: one kind of event for torch.neuron, torch.Event, torch.Stream and accel.

``torch.neuron.Event(...)`` makes a ``torch.Event`` of the neuron device (``emulator/device_streams.py``),
recorded and timed by the emulator's C++ device guard (``emulator/csrc/device_guard.cpp``) as
``torch.Event(device="neuron")`` and the autograd engine's events are. Before, it was a Python class of
its own: ``torch.Stream.record_event`` refused it ("expected event to be a torch.Event object"), it
could not be timed against a ``torch.Event``, and its ``elapsed_time`` timed events made without
``enable_timing`` where CUDA raises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron_emulator")

UNTIMED = "Both events must be created with argument 'enable_timing=True'"  # CUDA's and torch.Event's words
UNRECORDED = "Both events must be recorded before calculating elapsed time"


def _timed(start: torch.Event, end: torch.Event) -> float:
    """Milliseconds `start.elapsed_time(end)` gives for records 20 ms apart on the current stream."""
    start.record()
    time.sleep(0.02)
    end.record()
    return start.elapsed_time(end)


def test_neuron_events_are_torch_events_timed_with_them() -> None:
    ev = torch.neuron.Event(enable_timing=True)  # type: ignore[attr-defined]
    assert type(ev) is torch.Event and ev.query()  # not recorded yet: complete, as on CUDA
    assert isinstance(ev, torch.neuron.Event) and isinstance(torch.Event(device="neuron"), torch.neuron.Event)  # type: ignore[attr-defined]
    assert not isinstance(torch.Event(device="cpu"), torch.neuron.Event)  # type: ignore[attr-defined]
    other = torch.Event(device="neuron", enable_timing=True)
    assert 15 <= _timed(ev, other) < 2000
    assert 15 <= _timed(other, ev) < 2000  # either way round: one clock, one kind of event
    assert ev.device == torch.device("neuron:0") and ev.query()
    assert ev.elapsed_time(ev) == 0.0


def test_torch_streams_take_neuron_events() -> None:
    s = torch.neuron.Stream()  # type: ignore[attr-defined]
    ev = torch.neuron.Event(enable_timing=True)  # type: ignore[attr-defined]
    assert torch.Stream.record_event(s, ev) is ev  # refused before: not a torch.Event
    s.wait_event(ev)
    torch.accelerator.current_stream().wait_event(ev)
    made = s.record_event()
    assert isinstance(made, torch.neuron.Event) and made.query()  # type: ignore[attr-defined]
    later = torch.Stream.record_event(s, torch.Event(device="neuron", enable_timing=True))
    assert 0 <= ev.elapsed_time(later) < 2000
    plain = torch.accelerator.current_stream().record_event()  # torch.Stream's own: a torch.Event
    with pytest.raises(ValueError, match=UNTIMED):
        ev.elapsed_time(plain)  # made without timing by torch.Stream.record_event, as on CUDA


def test_elapsed_time_raises_as_on_cuda() -> None:
    a, b = torch.neuron.Event(), torch.neuron.Event()  # type: ignore[attr-defined]
    a.record()
    b.record()
    with pytest.raises(ValueError, match=UNTIMED):  # before: timed anyway
        a.elapsed_time(b)
    timed, never = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True)  # type: ignore[attr-defined]
    timed.record()
    with pytest.raises(ValueError, match=UNRECORDED):
        timed.elapsed_time(never)
    with pytest.raises(ValueError, match=UNRECORDED):
        never.elapsed_time(timed)
    never.synchronize()  # not recorded: nothing to wait for
    never.wait()


def test_events_of_two_devices_are_not_timed_against_each_other() -> None:
    if torch.neuron.device_count() < 2:  # type: ignore[attr-defined]
        pytest.skip("needs two emulated devices")
    on0, on1 = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True)  # type: ignore[attr-defined]
    on0.record(torch.neuron.current_stream(0))  # type: ignore[attr-defined]
    on1.record(torch.neuron.Stream(1))  # type: ignore[attr-defined]
    assert on1.device == torch.device("neuron:1")
    with pytest.raises(RuntimeError, match="neuron:0 and neuron:1"):
        on0.elapsed_time(on1)
    with pytest.raises(RuntimeError, match="does not match the recording stream"):
        on1.record(torch.neuron.Stream(0))  # type: ignore[attr-defined]


def test_torch_neuron_event_takes_torch_neurons_arguments() -> None:
    assert 15 <= _timed(torch.neuron.Event(True), torch.neuron.Event(True, True)) < 2000  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        torch.neuron.Event(interprocess=True)  # type: ignore[attr-defined]  # TorchNeuron has no IPC events


def test_accel_events_are_the_devices(neuron_selected: torch.device) -> None:
    import accel_abstraction as accel

    start, end = accel.Event(enable_timing=True), accel.Event(enable_timing=True)
    assert isinstance(start, torch.neuron.Event)  # type: ignore[attr-defined]
    side = accel.Stream()
    with accel.stream(side):
        assert 15 <= _timed(start, end) < 2000
    assert torch.Stream.record_event(torch.accelerator.current_stream(), start) is start


@pytest.mark.slow
def test_events_without_the_cpp_core() -> None:
    """PyTorch's Python guard records events but cannot time or synchronize them: torch.neuron.Event does."""
    code = """
import json, time, torch
from accel_neuron import emulator
from accel_neuron.emulator import native
emulator.install()
a, b, c = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True), torch.neuron.Event()
a.record(); time.sleep(0.02); b.record(torch.neuron.Stream()); c.record()
b.synchronize()
out = {"core": native.library() is not None, "ms": a.elapsed_time(b), "query": a.query() and b.query()}
for name, other in (("untimed", c), ("unrecorded", torch.neuron.Event(enable_timing=True))):
    try:
        a.elapsed_time(other)
    except ValueError as e:
        out[name] = str(e)
print("RESULT" + json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    env["TORCH_EXTENSIONS_DIR"] = "/dev/null/no-extensions"  # the core cannot be built: the pure-Python path
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(next(ln for ln in p.stdout.splitlines() if ln.startswith("RESULT"))[6:])
    assert out["core"] is False and out["query"] is True
    assert 15 <= out["ms"] < 2000
    assert UNTIMED in out["untimed"] and UNRECORDED in out["unrecorded"]
