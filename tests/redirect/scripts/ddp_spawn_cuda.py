"""DDP with torch.multiprocessing.spawn, after the shape of PyTorch's multi-GPU DDP tutorial. Never edited for the tests.

One process per GPU (``world_size = torch.cuda.device_count()`` unless given), NCCL,
``torch.cuda.set_device(rank)``, ``DistributedSampler``, ``DDP(device_ids=[rank])``.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from tinygpt import Windows, corpus
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def ddp_setup(rank: int, world_size: int, port: str) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    torch.cuda.set_device(rank)
    dist.init_process_group(backend="nccl", rank=rank, world_size=world_size)


def main(rank: int, world_size: int, port: str, epochs: int) -> None:
    ddp_setup(rank, world_size, port)
    torch.manual_seed(0)
    data = Windows(corpus(512), 8)
    loader = DataLoader(data, batch_size=32, shuffle=False, sampler=DistributedSampler(data), pin_memory=True)
    model = nn.Sequential(nn.Embedding(17, 16), nn.Flatten(), nn.Linear(8 * 16, 8 * 17)).to(rank)
    model = DDP(model, device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            x, y = x.to(rank), y.to(rank)
            loss = nn.functional.cross_entropy(model(x).view(-1, 17), y.view(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and step % 4 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item()!r}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", type=int, default=0)
    parser.add_argument("--port", default="29531")
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    world_size = args.world_size or torch.cuda.device_count()
    mp.spawn(main, args=(world_size, args.port, args.epochs), nprocs=world_size)
