"""Backward runs in the calling thread, chosen once at install (autograd_threads.py).

A backward that ran before install() must not break neuron backward (autograd's device queues),
in the installing thread or any other, and the choice has no lasting effect on a thread's setting.
"""

from __future__ import annotations

import threading

import torch
from accel_neuron.emulator import autograd_threads

CODE = """
import threading, torch
x = torch.ones(2, requires_grad=True)
(x * 2).sum().backward()                      # the engine starts its device threads here
from accel_neuron import emulator
emulator.install()
y = torch.ones(2, device="neuron", requires_grad=True)
(y * 3).sum().backward()
out = [y.grad.cpu().tolist()]
def worker():
    z = torch.ones(2, device="neuron", requires_grad=True)
    (z * 4).sum().backward()
    out.append(z.grad.cpu().tolist())
t = threading.Thread(target=worker); t.start(); t.join(60)
print(out)
"""


def test_backward_before_install_then_neuron_backward(run_python) -> None:  # type: ignore[no-untyped-def]
    result = run_python(CODE)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[[3.0, 3.0], [4.0, 4.0]]"


def _in_thread(fn) -> dict:  # type: ignore[no-untyped-def]
    seen: dict = {}
    t = threading.Thread(target=fn, args=(seen,))
    t.start()
    t.join(60)
    return seen


class _Probe(torch.autograd.Function):
    """Doubles; its backward records whether autograd multithreading was on while it ran."""

    seen: dict = {}

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # type: ignore[no-untyped-def, override]
        return x * 2

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> torch.Tensor:  # type: ignore[no-untyped-def, override]
        _Probe.seen["during"] = torch._C._is_multithreading_enabled()
        _Probe.seen["thread"] = threading.get_ident()
        return g * 2


def test_every_backward_runs_in_its_calling_thread(neuron_emulator: torch.device) -> None:
    # The choice is the process's, made at install: a thread that never made a neuron tensor
    # runs its backward in the calling thread too, and has its own setting back after.
    assert autograd_threads.chosen()

    def worker(seen: dict) -> None:
        seen["caller"] = threading.get_ident()
        x = torch.ones(2, requires_grad=True)
        _Probe.apply(x).sum().backward()
        seen["after"] = torch._C._is_multithreading_enabled()
        seen["grad"] = x.grad.tolist()

    seen = _in_thread(worker)
    assert seen == {"caller": _Probe.seen["thread"], "after": True, "grad": [2.0, 2.0]}
    assert _Probe.seen["during"] is False


def test_making_a_neuron_tensor_leaves_the_thread_setting_alone(neuron_emulator: torch.device) -> None:
    def worker(seen: dict) -> None:
        y = torch.ones(2, device=neuron_emulator, requires_grad=True)
        seen["made"] = torch._C._is_multithreading_enabled()
        (y * 3).sum().backward()
        seen["after"] = torch._C._is_multithreading_enabled()
        seen["grad"] = y.grad.cpu().tolist()

    assert _in_thread(worker) == {"made": True, "after": True, "grad": [3.0, 3.0]}
