"""A tiny training loop for the parity tests: linear regression by SGD on the selected device.

``--perturb-file F``: the first run creates F; a later run that finds it adds 1e-4 to every
loss from step 3 on (a deliberately diverging run). ``--fail``: exit 3 after two steps.
``--nan-from N``: the loss logged from step N on is NaN. ``--stop-after N``: stop (exit 0)
after N steps, fewer than the ``steps`` it declares with ``accel.log_settings``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

import accel_abstraction as accel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=6)
p.add_argument("--perturb-file", type=Path)
p.add_argument("--fail", action="store_true")
p.add_argument("--nan-from", type=int)
p.add_argument("--stop-after", type=int)
args = p.parse_args()
accel.log_settings(seed=0, steps=args.steps)

perturb = False
if args.perturb_file is not None:
    perturb = args.perturb_file.exists()
    args.perturb_file.touch()

dev = accel.device()
g = torch.Generator().manual_seed(0)
x = torch.randn(32, 4, generator=g).to(dev)
y = (x @ torch.tensor([1.0, -2.0, 0.5, 3.0], device=dev)).unsqueeze(1)
w = torch.zeros(4, 1, device=dev, requires_grad=True)
for step in range(args.steps):
    t0 = time.perf_counter()
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad = None
    value = loss.item() + (1e-4 if perturb and step >= 3 else 0.0)
    if args.nan_from is not None and step >= args.nan_from:
        value = float("nan")
    accel.log_metric(step=step, loss=value, step_time=time.perf_counter() - t0)
    if args.fail and step == 1:
        print("tiny_script: failing on purpose", file=sys.stderr)
        sys.exit(3)
    if args.stop_after is not None and step + 1 == args.stop_after:
        break
print("done on", accel.backend().name)
