"""The self-test's training script (``accel test``): a small MLP, a few AdamW steps, fp32.

Written against the public API only, as a user's script is: the model is built and the data
drawn on the CPU (one RNG for every backend), then moved to ``accel.device()``; every step
logs its loss with ``accel.log_metric``. Run as a file: ``python tiny_train.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import time

import torch

import accel_abstraction as accel


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    accel.log_settings(seed=args.seed, steps=args.steps, model="mlp 16-64-64-4", dtype="float32")
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 64),
        torch.nn.GELU(), torch.nn.Linear(64, 4),
    )  # fmt: skip
    x = torch.randn(64, 16)
    y = (x[:, :4] * 2.0 - x[:, 4:8]).tanh()
    device = accel.device()
    model = model.to(device)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=False)
    for step in range(args.steps):
        start = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()  # waits for the device
        accel.log_metric(step=step, loss=value, step_time=time.perf_counter() - start)


if __name__ == "__main__":
    main()
