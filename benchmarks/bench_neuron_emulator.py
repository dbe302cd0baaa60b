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


def _time(step: Callable[[], None], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - start) / n


def measure(
    make: Callable[[str, int], Callable[[], None]], batch: int, rounds: int, steps: int
) -> tuple[float, float]:
    """Best-round seconds per step on CPU and on neuron, alternating rounds."""
    cpu, neuron = make("cpu", batch), make("neuron", batch)
    for s in (cpu, neuron, cpu, neuron):
        s()  # warm up
    cpu_t, neu_t = [], []
    for _ in range(rounds):
        cpu_t.append(_time(cpu, steps))
        neu_t.append(_time(neuron, steps))
    return min(cpu_t), min(neu_t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    from accel_neuron import emulator

    emulator.install()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(f"{'workload':44} {'cpu ms':>8} {'neuron ms':>10} {'ratio':>6}")
    for name, make, batch in (
        ("MLP 3x512 + AdamW, batch 64", _mlp_step, 64),
        ("MLP 3x512 + AdamW, batch 256", _mlp_step, 256),
        ("transformer block (d256, dropout) + AdamW, 8x64", _transformer_step, 8),
    ):
        c, n = measure(make, batch, args.rounds, args.steps)
        print(f"{name:44} {c * 1e3:8.2f} {n * 1e3:10.2f} {n / c:5.2f}x")


if __name__ == "__main__":
    main()
