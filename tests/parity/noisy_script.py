"""For the ``--seeds`` tests: a falling loss whose noise comes from the seeds the script sets.

It seeds as scripts do (``torch.manual_seed``, ``random.seed``, a ``torch.Generator``), so
``accel parity --seeds N`` gives N different runs. ``--counter F --shift-after N --shift S``:
the runs are counted in F, and every run after the N-th adds S to every loss (a leg that
really differs when the legs run one after the other).
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

import torch

import accel_abstraction as accel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--counter", type=Path)
p.add_argument("--shift-after", type=int, default=0)
p.add_argument("--shift", type=float, default=0.5)
args = p.parse_args()

torch.manual_seed(1337)
random.seed(1337)
g = torch.Generator().manual_seed(1337)
dev = accel.device()
noise = (torch.randn(args.steps, generator=g) * 0.05 + random.gauss(0, 0.05) + torch.rand(1) * 0.05).to(dev)
shift = 0.0
if args.counter is not None:
    count = int(args.counter.read_text() or "0") + 1 if args.counter.exists() else 1
    args.counter.write_text(str(count))
    shift = args.shift if count > args.shift_after else 0.0
accel.log_settings(steps=args.steps)
for step in range(args.steps):
    loss = 2.0 * math.exp(-step / 10) + float(noise[step]) + shift
    accel.log_metric(step=step, loss=loss)
