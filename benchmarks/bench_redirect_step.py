"""Per-step cost of a redirected CUDA-style training step against the same step written with ``accel.*``.

Run: ``python benchmarks/bench_redirect_step.py [--backend cpu] [--width 64]``. Not a test.
Both loops train the same small MLP on the same batches in the same process: the CUDA-style
step (``x.pin_memory().to("cuda", non_blocking=True)``, NVTX ranges, CUDA events around the
step, ``torch.cuda.synchronize()``, a memory statistic read every step) runs under
:func:`~accel_abstraction.redirect.redirect_cuda`; the ported step calls ``accel.*``
(``accel.synchronize()``, ``accel.max_memory_allocated()``, ...). Each figure is the best of
several rounds (thread CPU time, so a busy machine's descheduling is not counted); the
ratio is redirected / ported. ``--width`` sets the model's size: the smaller the step,
the larger the share of the redirect's fixed per-call cost.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn

import accel_abstraction as accel
from accel_abstraction.redirect import redirect_cuda


def cuda_style_steps(model: nn.Module, opt: torch.optim.Optimizer, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for x, y in batches:
        torch.cuda.nvtx.range_push("step")
        x, y = x.pin_memory().to("cuda", non_blocking=True), y.pin_memory().to("cuda", non_blocking=True)
        start.record()
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        end.record()
        torch.cuda.synchronize()
        torch.cuda.max_memory_allocated()
        torch.cuda.nvtx.range_pop()


def ported_steps(model: nn.Module, opt: torch.optim.Optimizer, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    dev = accel.device()
    pin = accel.capabilities().pinned_memory
    for x, y in batches:
        if pin:
            x, y = accel.pin_memory(x), accel.pin_memory(y)
        x, y = x.to(dev, non_blocking=pin), y.to(dev, non_blocking=pin)
        t0 = time.perf_counter()
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        accel.synchronize()
        time.perf_counter() - t0
        accel.max_memory_allocated()


class _NoModel(nn.Module):
    """Stands in for the model to time the loops' own calls without any training work."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class _NoOpt:
    def zero_grad(self, set_to_none: bool = True) -> None:
        pass

    def step(self) -> None:
        pass


def _no_loss(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.sum().requires_grad_()


def step_ns(fn, model, opt, batches) -> float:  # type: ignore[no-untyped-def]
    t0 = time.thread_time_ns()
    fn(model, opt, batches)
    return (time.thread_time_ns() - t0) / len(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    backend = accel.use(args.backend)
    torch.manual_seed(0)
    w = args.width
    model = nn.Sequential(nn.Linear(w, 4 * w), nn.ReLU(), nn.Linear(4 * w, w)).to(accel.device())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batches = [(torch.randn(32, w), torch.randn(32, w)) for _ in range(args.steps)]
    allow = not backend.capabilities().supports("memory_stats")
    ported_steps(model, opt, batches[:4])  # warm up both
    with redirect_cuda(allow_missing=allow):
        cuda_style_steps(model, opt, batches[:4])
    redirected = ported = float("inf")
    for _ in range(args.rounds):  # interleaved, so drift on a shared machine hits both sides alike
        ported = min(ported, step_ns(ported_steps, model, opt, batches))
        with redirect_cuda(allow_missing=allow):
            redirected = min(redirected, step_ns(cuda_style_steps, model, opt, batches))
    print(f"backend {backend.name!r}, MLP width {w}, {args.steps} steps, best of {args.rounds} interleaved rounds (thread CPU time)")
    print(f"{'loop':34} {'ns/step':>10}")
    print(f"{'CUDA-style, redirected':34} {redirected:10.0f}")
    print(f"{'ported (accel.*)':34} {ported:10.0f}")
    print(f"ratio redirected/ported: {redirected / ported:.3f}  (per step: {(redirected - ported) / 1000:+.1f} us)")

    # The loops' own calls alone (no model, no optimizer, a trivial loss): what the redirect adds per step.
    real_loss, nn.functional.mse_loss = nn.functional.mse_loss, _no_loss
    try:
        bare_r = bare_p = float("inf")
        for _ in range(args.rounds):
            bare_p = min(bare_p, step_ns(ported_steps, _NoModel(), _NoOpt(), batches))
            with redirect_cuda(allow_missing=allow):
                bare_r = min(bare_r, step_ns(cuda_style_steps, _NoModel(), _NoOpt(), batches))
    finally:
        nn.functional.mse_loss = real_loss
    print(f"the loops' own calls alone: redirected {bare_r / 1000:.1f} us, ported {bare_p / 1000:.1f} us, "
          f"difference {(bare_r - bare_p) / 1000:+.1f} us/step = {(bare_r - bare_p) / ported:.1%} of the ported step")


if __name__ == "__main__":
    main()
