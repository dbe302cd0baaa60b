"""Train a small MLP and a small transformer block; save the final parameters.

Written against accel_abstraction only: run it with ACCEL_BACKEND=cpu and with
ACCEL_BACKEND=neuron ACCEL_NEURON_EMULATE=1 and compare the saved files.
Usage: python train_models.py OUT.pt [--amp] [--steps N]
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

import accel_abstraction as accel


class Block(nn.Module):
    def __init__(self, width: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, dropout=0.1, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * width, width))
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return self.head(x.mean(dim=1))


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))


def train(build, make_batch, steps: int, amp: bool, foreach: bool) -> dict[str, torch.Tensor]:  # type: ignore[no-untyped-def]
    dev = accel.device()
    accel.manual_seed_all(0)
    model = build().to(dev)  # initialised on the CPU generator, identically on every backend
    if accel.capabilities().supports("emulated"):
        # The emulated device's generator is a CPU generator with its own stream; start it
        # from the CPU's state so dropout draws exactly what the cpu backend draws.
        accel.set_rng_state(torch.get_rng_state())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=foreach)
    scaler = accel.GradScaler()
    for _ in range(steps):
        x, y = make_batch()
        x, y = x.to(dev), y.to(dev)
        with accel.autocast(enabled=amp):
            loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()

    accel.manual_seed_all(0)
    data = torch.Generator().manual_seed(1)
    results = {
        "mlp": train(mlp, lambda: (torch.randn(32, 64, generator=data), torch.randint(0, 10, (32,), generator=data)),
                     args.steps, args.amp, foreach=False),
        "block": train(Block, lambda: (torch.randn(8, 12, 32, generator=data), torch.randint(0, 10, (8,), generator=data)),
                       args.steps, args.amp, foreach=True),
    }
    torch.save({"device_type": accel.device_type(), "results": results}, args.out)


if __name__ == "__main__":
    main()
