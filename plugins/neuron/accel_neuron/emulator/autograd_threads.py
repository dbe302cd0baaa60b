"""Backward runs in the thread that calls it: one choice for the process, made by ``install()``.

Why: PyTorch's autograd engine sizes its per-device worker queues once, at the first backward of
the process, from the device types registered at that moment. When a backward ran before
:func:`~accel_neuron.emulator.install` (a CPU warm-up, a test suite), PrivateUse1 has no queue and
the first neuron backward fails with an INTERNAL ASSERT in ``engine.cpp``. The emulated device
computes synchronously on the CPU anyway, so its backward runs like CPU work: in the calling
thread, with no hand-off to a device thread.

The choice: :func:`run_backward_in_caller_thread`, called once by ``install()``, wraps the engine's
entry point (``torch.autograd._engine_run_backward``, which ``Tensor.backward``,
``torch.autograd.backward`` and ``torch.autograd.grad`` call) so that every backward, in every
thread, runs with autograd multithreading off (PyTorch's switch, a per-thread setting), and
switches it back on after when it was on before. Nothing else touches the switch from Python:
making a neuron tensor does not (it once did, quietly, per thread), and a thread's own setting is
the same after a backward as before.

What it costs: nothing for CPU and emulated-device work (the engine runs CPU work in the calling
thread anyway). A process that also runs a real accelerator (CUDA) next to the emulator runs
that device's backward in the calling thread too. Both per-op paths leave a thread's setting
alone when they make a neuron storage (the C++ core once switched it off there too).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import torch

_is_enabled = torch._C._is_multithreading_enabled
_set_enabled = torch._C._set_multithreading_enabled

_lock = threading.Lock()
_chosen = False


def _in_caller_thread(run: Callable[..., Any]) -> Callable[..., Any]:
    """`run` (the engine's entry point) with autograd multithreading off for the call."""

    @functools.wraps(run)
    def run_backward(*args: Any, **kwargs: Any) -> Any:
        if not _is_enabled():  # off already (set by the caller, or a backward inside a backward)
            return run(*args, **kwargs)
        _set_enabled(False)
        try:
            return run(*args, **kwargs)
        finally:
            _set_enabled(True)

    run_backward.__accel_neuron_caller_thread__ = True  # type: ignore[attr-defined]
    return run_backward


def run_backward_in_caller_thread() -> None:
    """Make every backward of the process run in its calling thread (``install()`` does, once).

    Idempotent. Both names of the entry point are replaced (``torch.autograd`` imported it from
    ``torch.autograd.graph``), so code that swaps one and restores both, as
    ``torch.compiler``'s tracing does, keeps the choice.
    """
    global _chosen
    with _lock:
        if _chosen:
            return
        wrapped = _in_caller_thread(torch.autograd.graph._engine_run_backward)
        torch.autograd.graph._engine_run_backward = wrapped
        torch.autograd._engine_run_backward = wrapped
        _chosen = True


def chosen() -> bool:
    """Whether :func:`run_backward_in_caller_thread` has run in this process."""
    return _chosen
