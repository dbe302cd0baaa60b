"""Backward of emulated neuron tensors runs in the thread that calls it.

PyTorch's autograd engine sizes its per-device worker queues once, at the first
backward of the process, from the device types registered at that moment. When a
backward ran before :func:`install` (a CPU warm-up, a test suite), PrivateUse1 has
no queue and the first neuron backward fails with an INTERNAL ASSERT in
``engine.cpp``. The emulated device computes synchronously on the CPU anyway, so
its backward runs like CPU work, in the calling thread: autograd multithreading is
switched off (a thread-local setting) in every thread that creates neuron tensors.
"""

from __future__ import annotations

import threading

import torch

_local = threading.local()


def run_backward_in_caller_thread() -> None:
    """Switch autograd multithreading off in this thread (once per thread; cheap after)."""
    if not getattr(_local, "done", False):
        _local.done = True
        torch._C._set_multithreading_enabled(False)
