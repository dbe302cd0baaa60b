"""Prints, as one JSON line, what each seeding call a script may make left behind (``--seeds`` tests)."""

from __future__ import annotations

import json
import random

import numpy
import torch

import accel_abstraction as accel

out = {}
torch.manual_seed(1337)
out["torch.manual_seed"] = torch.initial_seed()
torch.random.manual_seed(7)
out["torch.random.manual_seed"] = torch.initial_seed()
random.seed(5)
out["random.seed"] = random.random()
numpy.random.seed(9)
out["numpy.random.seed"] = float(numpy.random.rand())
out["torch.Generator"] = torch.Generator().manual_seed(3).initial_seed()
out["isinstance"] = isinstance(torch.default_generator, torch.Generator)
accel.manual_seed_all(11)
out["accel.manual_seed_all"] = torch.initial_seed()
accel.manual_seed(12)
out["accel.manual_seed"] = torch.initial_seed()
torch.cuda.manual_seed(13)  # CPU-only torch: queued for a CUDA that never comes; redirected: the backend's
out["torch.cuda.manual_seed"] = torch.initial_seed()
print(json.dumps(out))
