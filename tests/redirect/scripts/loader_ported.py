"""loader_cuda.py ported by hand to accel-abstraction: the reference its redirected run must match."""

import argparse

import torch
import torch.nn as nn
from tinygpt import Windows, corpus

import accel_abstraction as accel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    device = accel.device()
    torch.manual_seed(0)
    g = torch.Generator()
    g.manual_seed(0)
    pin = accel.capabilities().pinned_memory
    windows = Windows(corpus(), 8)
    loader = torch.utils.data.DataLoader(windows, batch_size=16, shuffle=True, generator=g, num_workers=args.workers,
                                         multiprocessing_context="spawn", pin_memory=pin)
    model = nn.Sequential(nn.Embedding(17, 16), nn.Flatten(), nn.Linear(8 * 16, 8 * 17)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for step, (x, y) in enumerate(loader):
        if step == args.steps:
            break
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x).view(-1, 17), y.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item()!r}", flush=True)


if __name__ == "__main__":
    main()
