"""Per-step cost of a redirected CUDA-style training step against the same step written with ``accel.*``.

Run: ``python benchmarks/bench_redirect_step.py [--backend cpu] [--width 64]``. Not a test.
Both loops train the same small MLP on the same batches in the same process: the CUDA-style
step (``x.pin_memory().to("cuda", non_blocking=True)``, NVTX ranges, CUDA events around the
step, ``torch.cuda.synchronize()``, a memory statistic read every step) runs under
:func:`~accel_abstraction.redirect.redirect_cuda`; the ported step calls ``accel.*``
(``accel.synchronize()``, ``accel.max_memory_allocated()``, ...). Each figure is the best of
interleaved rounds (:mod:`harness`: thread CPU time, median and range); the ratio is
redirected / ported, and each measured call installs and undoes the redirect once around
``--steps`` steps, as ``accel run`` does once around a whole script. ``--width`` sets the model's size: the smaller the step,
the larger the share of the redirect's fixed per-call cost.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn

import accel_abstraction as accel
from accel_abstraction.redirect import redirect_cuda

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--width", type=int, action="append", help="MLP widths (default 64 and 256)")
    parser.add_argument("--steps", type=int, default=50, help="steps per measured call (one redirect per call)")
    harness.add_common_args(parser, rounds=9)
    args = parser.parse_args()
    harness.setup_threads(args.threads)
    backend = accel.use(args.backend)
    allow = not backend.capabilities().supports("memory_stats")
    cases = []
    for w in args.width or [64, 256]:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(w, 4 * w), nn.ReLU(), nn.Linear(4 * w, w)).to(accel.device())
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        batches = [(torch.randn(32, w), torch.randn(32, w)) for _ in range(args.steps)]

        def redirected(model=model, opt=opt, batches=batches) -> None:  # type: ignore[no-untyped-def]
            with redirect_cuda(allow_missing=allow):
                cuda_style_steps(model, opt, batches)

        def ported(model=model, opt=opt, batches=batches) -> None:  # type: ignore[no-untyped-def]
            ported_steps(model, opt, batches)

        cases.append(harness.Case(f"{args.steps} steps, MLP width {w}", redirected, ported, "accel.* loop"))
    results = harness.compare_calls(cases, args.rounds, args.budget, args.seed)
    harness.print_results(
        f"redirected CUDA-style training steps vs the same steps written with accel.* on {backend.name!r}",
        results,
        args.threads,
    )
    if args.json:
        harness.write_json(args.json, "redirect_step", results, args.threads, {"backend": backend.name})


if __name__ == "__main__":
    main()
