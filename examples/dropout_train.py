"""A small classifier with dropout that sets its own seed: what ``accel parity --seeds`` is for.

Written as scripts usually are: ``torch.manual_seed(1337)`` at the top, the model initialised
and the data drawn after it, dropout drawing from the device's generator. On the CPU and on
another device the dropout masks differ (each device has its own random stream), so the
losses are not bitwise equal, but the training is the same: ``accel parity --seeds 5``
says "equivalent"; a real difference (a learning rate 1.5x on one backend) says "diverged"::

    accel parity examples/dropout_train.py --backends cpu,neuron --seeds 5             # equivalent
    accel parity examples/dropout_train.py --backends cpu,neuron --seeds 5 -- --lr-factor-on neuron=1.5
    ACCEL_NEURON_EMULATE_RNG=cpu accel parity examples/dropout_train.py --backends cpu,neuron   # bitwise
    accel parity examples/dropout_train.py --backends cpu,neuron --locate -- --tanh-gelu-on neuron

``--lr-factor-on NAME=F`` multiplies the learning rate by F when the selected backend is NAME;
``--tanh-gelu-on NAME`` makes block 1's GELU use the tanh approximation there (one layer
changed on one backend, for ``--locate``). The data: inputs from a fixed random teacher
network's classes, drawn after the seed, so the seed changes data, initialisation and
dropout alike.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import accel_abstraction as accel


class Block(nn.Module):
    def __init__(self, width: int, dropout: float) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = nn.GELU()
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.drop(self.act(self.fc(x)))


class Classifier(nn.Module):
    def __init__(self, n_in: int, width: int, n_classes: int, depth: int, dropout: float) -> None:
        super().__init__()
        self.inp = nn.Linear(n_in, width)
        self.blocks = nn.Sequential(*[Block(width, dropout) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.blocks(self.inp(x))))


def _on(spec: str | None, backend: str) -> str | None:
    """``NAME=VALUE`` -> VALUE when NAME is the selected backend (``NAME`` alone -> "")."""
    if not spec:
        return None
    name, _, value = spec.partition("=")
    return value if name == backend else None


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=1337, help="the seed the script sets (default 1337)")
    p.add_argument("--lr-factor-on", metavar="NAME=F", help="multiply the learning rate by F on backend NAME")
    p.add_argument("--tanh-gelu-on", metavar="NAME", help="block 1's GELU uses the tanh approximation on NAME")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)  # the script's own seed: accel parity --seeds derives one per run from it

    backend = accel.backend().name
    dev = accel.device()
    n_in, n_classes = 16, 8
    teacher = torch.randn(n_in, n_classes)
    data = torch.randn(2048, n_in)
    labels = (data @ teacher).argmax(dim=1)
    model = Classifier(n_in, args.width, n_classes, args.depth, args.dropout)
    if _on(args.tanh_gelu_on, backend) is not None:
        model.blocks[min(1, args.depth - 1)].act = nn.GELU(approximate="tanh")
    model.to(dev)
    factor = _on(args.lr_factor_on, backend)
    lr = args.lr * (float(factor) if factor else 1.0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    accel.log_settings(seed=args.seed, steps=args.steps, dropout=args.dropout)
    for step in range(args.steps):
        idx = torch.randint(len(data), (args.batch_size,))
        t0 = time.perf_counter()
        x, y = data[idx].to(dev), labels[idx].to(dev)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()
        accel.log_metric(step=step, loss=value, step_time=time.perf_counter() - t0)
    print(f"{backend}: loss {value:.4f} after {args.steps} steps (lr {lr:g})")


if __name__ == "__main__":
    main()
