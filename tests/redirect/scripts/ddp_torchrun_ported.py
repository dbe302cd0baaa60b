"""ddp_torchrun_cuda.py ported by hand to accel-abstraction: the reference its redirected run must match."""

import torch
import torch.distributed as dist
import torch.nn as nn
from tinygpt import corpus

import accel_abstraction as accel
from accel_abstraction.distributed import init_distributed

info = init_distributed()
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
dev = accel.device()
net = nn.Sequential(nn.Embedding(17, 8), nn.Flatten(), nn.Linear(4 * 8, 17)).to(dev)
net = nn.parallel.DistributedDataParallel(net)
opt = torch.optim.SGD(net.parameters(), lr=0.5)
tokens = corpus(1024).to(dev)
for step in range(4):
    first = rank * 16 + step * 64
    starts = torch.arange(first, first + 16, device=dev)
    inputs = torch.stack([tokens[s : s + 4] for s in starts])
    loss = nn.functional.cross_entropy(net(inputs), tokens[starts + 4])
    opt.zero_grad()
    loss.backward()
    opt.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean)
    if rank == 0:
        print(f"step {step} loss {(mean / world).item()!r}", flush=True)
accel.destroy_distributed()  # every rank done with its last collective before any tears down
