# ruff: noqa
"""A diffusion sampler run as one process per GPU: the device is an ordinal from the rank."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def sample(model, steps: int, batch: int = 4):
    dist.init_process_group("nccl")  # expect: ACC171
    rank = dist.get_rank()
    device = rank % torch.cuda.device_count()  # expect: ACC122
    model = DDP(model.to(device), device_ids=[device])  # expect: ACC104, ACC172
    latents = torch.randn(batch, 4, 8, 8, device=device)  # expect: ACC104
    labels = torch.randint(0, 10, (batch,), device=device)  # expect: ACC104
    for _ in range(steps):
        latents = model(latents, labels).to(device)  # expect: ACC104
    return latents.to("cpu")
