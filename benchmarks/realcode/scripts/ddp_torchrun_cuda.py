"""A torchrun DDP training script, written by us in the common shape of real ones (one process
per GPU from ``LOCAL_RANK``, ``set_device``, nccl, ``DDP(model, device_ids=[local_rank])``,
a ``DistributedSampler``), with the CPU fallback (gloo, no device ids) such scripts keep for
debugging on a laptop. Never edited to suit the port; ``accel port`` runs on it as on
third-party code (benchmarks/realcode/e2e.py). Run: ``torchrun --nproc-per-node 2 ddp_torchrun_cuda.py``.
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

local_rank = int(os.environ["LOCAL_RANK"])
if torch.cuda.is_available():
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl")
else:
    device = torch.device("cpu")
    dist.init_process_group("gloo")
rank = dist.get_rank()

torch.manual_seed(0)
g = torch.Generator().manual_seed(1)
data = TensorDataset(torch.randn(64, 8, generator=g), torch.randint(0, 3, (64,), generator=g))
sampler = DistributedSampler(data, shuffle=True, seed=0)
loader = DataLoader(data, batch_size=8, sampler=sampler, pin_memory=torch.cuda.is_available())

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
model = DDP(model, device_ids=[local_rank] if torch.cuda.is_available() else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} epoch {epoch} loss {loss.item():.6f}")

dist.destroy_process_group()
