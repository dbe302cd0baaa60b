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
import sys
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

import accel_abstraction as accel
from accel_abstraction.redirect import redirect_cuda

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402


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


def _case(redirected: str, direct: str, scope: dict[str, object]) -> harness.Case:
    # lambdas compiled from the literal statements: one fixed call site each, like a training loop's
    return harness.Case(
        redirected,
        eval(f"lambda: {redirected}", scope),  # noqa: S307 - fixed strings
        eval(f"lambda: {direct}", scope),  # noqa: S307 - fixed strings
        direct_label=direct,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    harness.add_common_args(parser, rounds=7)
    args = parser.parse_args()
    harness.setup_threads(args.threads)

    backend = accel.use(args.backend)
    dev = accel.device()
    zeros, tensor_to = torch.zeros, torch.Tensor.to
    x, a, b = torch.ones(8), torch.ones(8), torch.ones(8)
    allow = not backend.capabilities().supports("memory_stats")
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
        cases = [_case(red, direct, scope) for red, direct in pairs]
        results = harness.compare_calls(cases, args.rounds, args.budget * 0.8, args.seed)
    # what patching factories saves over a TorchFunctionMode: an active mode taxes every torch op.
    # 100 operations per call, so entering the mode is amortised as it is over a training step.
    mode = _TranslateDevices(dev)

    def add_under_mode() -> None:
        with mode:
            for _ in range(100):
                a + b

    def add_plain() -> None:
        for _ in range(100):
            a + b

    def zeros_under_mode() -> None:
        with mode:
            for _ in range(100):
                torch.zeros(8, device="cuda")

    def zeros_direct() -> None:
        for _ in range(100):
            zeros(8, device=dev)

    mode_cases = [
        harness.Case("100x a + b  [TorchFunctionMode active]", add_under_mode, add_plain, "100x a + b"),
        harness.Case('100x torch.zeros(8, device="cuda")  [mode]', zeros_under_mode, zeros_direct, "100x zeros(8, device=dev)"),
    ]
    results += harness.compare_calls(mode_cases, args.rounds, args.budget * 0.2, args.seed)
    harness.print_results(f"redirected CUDA calls on {backend.name!r} vs the direct call", results, args.threads)
    if args.json:
        harness.write_json(args.json, "redirect", results, args.threads, {"backend": backend.name})


if __name__ == "__main__":
    main()
