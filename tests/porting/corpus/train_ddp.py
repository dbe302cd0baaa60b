# ruff: noqa
"""Multi-GPU data parallel training launched with torchrun."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"  # expect: ACC192
os.environ.setdefault("NCCL_DEBUG", "WARN")  # expect: ACC199
visible = os.getenv("CUDA_VISIBLE_DEVICES", "")  # expect: ACC192
if "CUDA_VISIBLE_DEVICES" in os.environ:  # expect: ACC192
    pass
os.environ["MASTER_PORT"] = "29500"
local_rank = int(os.environ["LOCAL_RANK"])


def setup(backend="nccl"):  # expect: ACC171
    dist.init_process_group(backend=backend)


dist.init_process_group("nccl", rank=local_rank, world_size=2)  # expect: ACC171
torch.cuda.set_device(local_rank)  # expect: ACC123
model = torch.nn.Linear(8, 8).to(local_rank)  # expect: ACC104
ddp = DDP(model, device_ids=[local_rank], output_device=local_rank)  # expect: ACC172
dist.barrier(device_ids=[local_rank])  # expect: ACC104
sharded = FSDP(torch.nn.Linear(8, 8), device_id=local_rank)  # expect: ACC172
sharded2 = FSDP(torch.nn.Linear(8, 8), device_id=torch.cuda.current_device())  # expect: ACC123, ACC172
unsharded = FSDP(torch.nn.Linear(8, 8), device_id=None)
data = TensorDataset(torch.randn(64, 8))
loader = DataLoader(data, batch_size=8, pin_memory=True, num_workers=2)  # expect: ACC191
loader2 = DataLoader(data, batch_size=8, pin_memory=False)
for (batch,) in loader:
    batch = batch.to(f"cuda:{local_rank}", non_blocking=True)  # expect: ACC103
    ddp(batch).sum().backward()
pinned = torch.randn(4).pin_memory()  # expect: ACC191
dist.destroy_process_group()
