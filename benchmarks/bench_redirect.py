"""Cost of a redirected CUDA call against the direct backend call. Prints ratios.

Run: ``python benchmarks/bench_redirect.py [--backend cpu]``. Not a test. Each figure is the
best of several rounds (thread CPU time), all measured in the same process: the "direct" callables are the
originals captured before the redirect was installed, or the public ``accel.*`` function
(bound to the backend's torch callable), so both sides run on the same warm interpreter.

The last rows are the measurement behind patching factories rather than using a
``TorchFunctionMode``: an active mode adds a Python call to every torch operation, while
patched factories leave unrelated operations untouched.
"""

from __future__ import annotations

import argparse
import time
import timeit

import torch
from torch.overrides import TorchFunctionMode

import accel_abstraction as accel
from accel_abstraction.redirect import redirect_cuda


def best_ns(stmt: str, scope: dict[str, object], number: int, rounds: int) -> float:
    """Best time of ``stmt`` in ns, run in timeit's loop frame (a long-lived caller frame, like a training loop).

    Timed with this thread's CPU clock, so time the thread spends descheduled on a busy
    machine is not counted.
    """
    timer = timeit.Timer(stmt, globals=scope, timer=time.thread_time)
    return min(timer.timeit(number) for _ in range(rounds)) / number * 1e9


class _TranslateDevices(TorchFunctionMode):
    """What a mode-based redirect of factories and ``.to`` would minimally do."""

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.device = device

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        dev = kwargs.get("device")
        if dev is not None and (dev == "cuda" or getattr(dev, "type", None) == "cuda"):
            kwargs["device"] = self.device
        return func(*args, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n, r = args.number, args.rounds

    backend = accel.use(args.backend)
    dev = accel.device()
    zeros, tensor_to = torch.zeros, torch.Tensor.to
    x, a, b = torch.ones(8), torch.ones(8), torch.ones(8)
    allow = not backend.capabilities().supports("memory_stats")

    rows: list[tuple[str, str, float, float]] = []
    scope = {"torch": torch, "accel": accel, "backend": backend, "dev": dev, "zeros": zeros,
             "tensor_to": tensor_to, "x": x, "a": a, "b": b}  # fmt: skip
    pairs = [
        ("torch.cuda.synchronize()", "accel.synchronize()"),
        ("torch.cuda.device_count()", "accel.device_count()"),
        ("torch.cuda.is_available()", "backend.is_available()"),
        ('torch.zeros(8, device="cuda")', "zeros(8, device=dev)"),
        ("torch.zeros(8)", "zeros(8)"),
        ('x.to("cuda")', "tensor_to(x, dev)"),
        ("a + b", "a + b"),
    ]
    if backend.capabilities().supports("memory_stats"):
        pairs.append(("torch.cuda.memory_allocated()", "accel.memory_allocated()"))
    with redirect_cuda(allow_missing=allow):
        for redirected, direct in pairs:
            exec(redirected, scope), exec(direct, scope)
            rows.append((redirected, direct, best_ns(redirected, scope, n, r), best_ns(direct, scope, n, r)))

    plain = best_ns("a + b", scope, n, r)
    direct_zeros = best_ns("zeros(8, device=dev)", scope, n, r)
    with _TranslateDevices(dev):
        moded = best_ns("a + b", scope, n, r)
        mode_zeros = best_ns('torch.zeros(8, device="cuda")', scope, n, r)
    rows.append(("a + b  [TorchFunctionMode active]", "a + b", moded, plain))
    rows.append(('torch.zeros(8, device="cuda")  [mode]', "zeros(8, device=dev)", mode_zeros, direct_zeros))

    print(f"backend {backend.name!r}, best of {r} rounds x {n} calls")
    print("direct: the original (unpatched) callable or the public accel.* function, same process")
    print(f"{'redirected call':40} {'direct call':26} {'redirect ns':>12} {'direct ns':>10} {'ratio':>7}")
    for label, direct_label, red, base in rows:
        print(f"{label:40} {direct_label:26} {red:12.0f} {base:10.0f} {red / base:7.2f}")


if __name__ == "__main__":
    main()
