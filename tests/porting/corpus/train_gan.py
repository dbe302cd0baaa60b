# ruff: noqa
"""A GAN training loop in the style of community examples: classes, helpers, flags."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn


def get_args():
    p = argparse.ArgumentParser(description="Train a DCGAN on cuda if available")
    p.add_argument("--cuda", action="store_true", help="enables cuda")
    p.add_argument("--ngpu", type=int, default=1, help="number of GPUs to use")
    p.add_argument("--amp", action="store_true")
    return p.parse_args()


class Generator(nn.Module):
    """Maps noise to images; runs on cuda when --cuda is given."""

    def __init__(self, ngpu):
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(nn.Linear(100, 784), nn.Tanh())

    def forward(self, z):
        if z.is_cuda and self.ngpu > 1:  # expect: ACC112
            return nn.parallel.data_parallel(self.main, z, range(self.ngpu))
        return self.main(z)


def pick_device(args):
    if torch.backends.mps.is_available():
        return torch.device("mps")
    use_cuda = args.cuda and torch.cuda.is_available()  # expect: ACC121
    return torch.device("cuda:0" if use_cuda else "cpu")  # expect: ACC101


def main():
    args = get_args()
    backend = "nccl" if torch.cuda.is_available() else "gloo"  # expect: ACC171, ACC121
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group(backend=backend)
    device = pick_device(args)
    netG = Generator(args.ngpu).to(device)
    netD = nn.Sequential(nn.Linear(784, 1), nn.Sigmoid())
    if args.cuda:
        netD.cuda()  # expect: ACC111
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)  # expect: ACC133
    opt = torch.optim.Adam(list(netG.parameters()) + list(netD.parameters()))
    fixed_noise = torch.randn(
        64,
        100,
        device=device,
    )
    for step in range(2):
        noise = torch.randn(64, 100, device=device)
        with torch.no_grad(), torch.cuda.amp.autocast(enabled=args.amp):  # expect: ACC131
            fake = netG(noise)
        with torch.cuda.amp.autocast(  # expect: ACC131
            enabled=args.amp,
            dtype=torch.float16,
        ):
            loss = netD(fake).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if device.type == "cuda":  # expect: ACC113
            torch.cuda.synchronize(device)  # expect: ACC161
            print(f"step {step}: {torch.cuda.max_memory_allocated(device) / 1e9:.2f} GB")  # expect: ACC151
    print("done on", device, "with cuda" if args.cuda else "without cuda")


if __name__ == "__main__":
    main()
