"""Step time of the emulated neuron device against the CPU, measured in the same process.

For each workload it builds the same model on the CPU and on the emulated
``neuron`` device and times full training steps (forward, backward, AdamW),
alternating CPU and neuron rounds so both see the same machine load, and
prints the best-round step times and their ratio (emulated / CPU; 1.00 = no
overhead). First it prints the per-op cost of single small ops (thread CPU
time, best of rounds): the emulator's overhead per op in microseconds.
Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_neuron_emulator.py [--steps N] [--ops-only]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
import torch.nn as nn


def _mlp_step(device: str, batch: int) -> Callable[[], None]:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512)
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    x = torch.randn(batch, 512).to(device)
    y = torch.randn(batch, 512).to(device)

    def step() -> None:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def _transformer_step(device: str, batch: int) -> Callable[[], None]:
    torch.manual_seed(0)
    model = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.1, batch_first=True).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    x = torch.randn(batch, 64, 256).to(device)

    def step() -> None:
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def _time(step: Callable[[], None], n: int) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) per step."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        step()
    return (time.perf_counter() - wall) / n, (time.process_time() - cpu) / n


def measure(
    make: Callable[[str, int], Callable[[], None]], batch: int, rounds: int, steps: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Best-round (wall, CPU-time) seconds per step on CPU and on neuron, alternating rounds."""
    cpu, neuron = make("cpu", batch), make("neuron", batch)
    for s in (cpu, neuron, cpu, neuron):
        s()  # warm up
    cpu_t, neu_t = [], []
    for _ in range(rounds):
        cpu_t.append(_time(cpu, steps))
        neu_t.append(_time(neuron, steps))
    return (
        (min(t[0] for t in cpu_t), min(t[1] for t in cpu_t)),
        (min(t[0] for t in neu_t), min(t[1] for t in neu_t)),
    )


def _op_cases(device: str) -> dict[str, Callable[[], object]]:
    """Single small ops (so the op itself costs little), by name."""
    torch.manual_seed(0)
    a, b = torch.randn(8, 8).to(device), torch.randn(8, 8).to(device)
    w = torch.randn(8, 8).to(device)
    xs = [torch.randn(8).to(device) for _ in range(4)]

    def chain() -> object:
        # each op consumes the previous op's fresh result, as in a model
        return torch.relu(torch.add(torch.mul(a, b), b))

    return {
        "add": lambda: torch.add(a, b),
        "mul_ (in-place)": lambda: a.mul_(1.0),
        "linear": lambda: nn.functional.linear(a, w),
        "relu": lambda: torch.relu(a),
        "sum": lambda: a.sum(),
        "view": lambda: a.view(64),
        "t (view)": lambda: a.t(),
        "_foreach_add_ (4 tensors)": lambda: torch._foreach_add_(xs, 1.0),
        "mul->add->relu chain (per op)": chain,
    }


def op_overhead(reps: int = 2000, rounds: int = 5) -> dict[str, tuple[float, float]]:
    """Per-op thread CPU time in microseconds on CPU and on neuron, best of `rounds`."""
    cpu, neuron = _op_cases("cpu"), _op_cases("neuron")
    out = {}
    for name in cpu:
        best = {}
        for dev, fn in (("cpu", cpu[name]), ("neuron", neuron[name])):
            for _ in range(50):
                fn()
            times = []
            for _ in range(rounds):
                t = time.thread_time()
                for _ in range(reps):
                    fn()
                times.append((time.thread_time() - t) / reps)
            best[dev] = min(times) * 1e6
        out[name] = (best["cpu"], best["neuron"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--ops-only", action="store_true", help="only the per-op overhead table")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from accel_neuron import emulator

    emulator.install()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(f"{'op (8x8 float32)':30} {'cpu us':>8} {'neuron us':>10} {'overhead us':>12}")
    for name, (c, n) in op_overhead().items():
        k = 3 if "chain" in name else 1
        print(f"{name:30} {c / k:8.1f} {n / k:10.1f} {(n - c) / k:12.1f}")
    if args.ops_only:
        return
    print("wall = elapsed time; cpu = process CPU time (steadier on a loaded machine)")
    print(f"{'workload':48} {'cpu ms':>8} {'neuron ms':>10} {'wall ratio':>10} {'cpu-time ratio':>15}")
    for name, make, batch in (
        ("MLP 3x512 + AdamW, batch 8 (overhead-bound)", _mlp_step, 8),
        ("MLP 3x512 + AdamW, batch 64", _mlp_step, 64),
        ("MLP 3x512 + AdamW, batch 256", _mlp_step, 256),
        ("transformer block d256 (dropout) + AdamW, 8x64", _transformer_step, 8),
    ):
        (c, c_cpu), (n, n_cpu) = measure(make, batch, args.rounds, args.steps)
        print(f"{name:48} {c * 1e3:8.2f} {n * 1e3:10.2f} {n / c:9.2f}x {n_cpu / c_cpu:14.2f}x")


if __name__ == "__main__":
    main()
