"""ddp_spawn_cuda.py ported by hand to accel-abstraction: the reference its redirected run must match."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from tinygpt import Windows, corpus
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

import accel_abstraction as accel


def worker(rank: int, world_size: int, port: str, epochs: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group(backend=accel.dist_backend(), rank=rank, world_size=world_size)
    torch.manual_seed(0)
    windows = Windows(corpus(512), 8)
    sampler = DistributedSampler(windows)
    loader = DataLoader(windows, batch_size=32, shuffle=False, sampler=sampler, pin_memory=accel.capabilities().pinned_memory)
    net = nn.Sequential(nn.Embedding(17, 16), nn.Flatten(), nn.Linear(8 * 16, 8 * 17)).to(accel.device())
    net = DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            out = net(x.to(accel.device()))
            loss = nn.functional.cross_entropy(out.view(-1, 17), y.to(accel.device()).view(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and step % 4 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item()!r}", flush=True)
    accel.destroy_distributed()  # every rank done with its last collective before any tears down


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--port", default="29532")
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    mp.spawn(worker, args=(args.world_size, args.port, args.epochs), nprocs=args.world_size)
