"""Step time of the emulated neuron device against the CPU, measured in the same process.

For each workload it builds the same model on the CPU and on the emulated
``neuron`` device and times full training steps (forward, backward, AdamW),
alternating CPU and neuron rounds so both see the same machine load, and
prints median step times and their ratio (emulated / CPU; 1.00 = no
overhead). Run: ``python benchmarks/bench_neuron_emulator.py [--steps N]``.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    from accel_neuron import emulator

    emulator.install()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
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
