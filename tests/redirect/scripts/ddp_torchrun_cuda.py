"""A DDP script for torchrun, after the shape of PyTorch's torchrun DDP examples. Never edited for the tests.

``LOCAL_RANK`` from the environment, ``torch.cuda.set_device``, ``init_process_group("nccl")``,
``DDP(device_ids=[local_rank])``, a checkpoint saved by rank 0 and loaded with a CUDA
``map_location`` by every rank.
"""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from tinygpt import corpus
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group(backend="nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Embedding(17, 8), nn.Flatten(), nn.Linear(4 * 8, 17)).cuda(), device_ids=[local_rank])
opt = torch.optim.SGD(model.parameters(), lr=0.5)
data = corpus(1024).cuda()
for step in range(4):
    starts = torch.arange(rank * 16 + step * 64, (rank + 1) * 16 + step * 64, device=f"cuda:{local_rank}")
    x = torch.stack([data[s : s + 4] for s in starts])
    y = data[starts + 4]
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    total = loss.detach().clone()
    dist.all_reduce(total)
    if rank == 0:
        print(f"step {step} loss {(total / world).item()!r}", flush=True)
path = os.path.join(tempfile.gettempdir(), f"accel-ddp-{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}.pt")
if rank == 0:
    torch.save(model.module.state_dict(), path)
dist.barrier()
model.module.load_state_dict(torch.load(path, map_location={"cuda:0": f"cuda:{local_rank}"}))
dist.barrier()
if rank == 0:
    os.remove(path)
dist.destroy_process_group()
