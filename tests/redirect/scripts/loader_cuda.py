"""A training loop fed by a DataLoader with worker processes (spawn) and pinned memory, written for CUDA.

After the shape of the ImageNet/MNIST examples: ``main()`` under a ``__main__`` guard, the
data prepared by workers, batches pinned by the loader and copied with ``non_blocking``.
Never edited for the tests.
"""

import argparse

import torch
import torch.nn as nn
from tinygpt import Windows, corpus


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    g = torch.Generator()
    g.manual_seed(0)
    loader = torch.utils.data.DataLoader(
        Windows(corpus(), 8), batch_size=16, shuffle=True, generator=g, num_workers=args.workers,
        multiprocessing_context="spawn", pin_memory=True, persistent_workers=False,
    )  # fmt: skip
    model = nn.Sequential(nn.Embedding(17, 16), nn.Flatten(), nn.Linear(8 * 16, 8 * 17)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for step, (x, y) in enumerate(loader):
        if step == args.steps:
            break
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = nn.functional.cross_entropy(model(x).view(-1, 17), y.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item()!r}", flush=True)
    print(f"on {device}: {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
