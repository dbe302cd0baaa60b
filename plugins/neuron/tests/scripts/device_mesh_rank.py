"""One rank of a 2-rank run on the emulated neuron device: DeviceMesh, collectives, DDP, DTensor.

Launched twice by test_emulator_devices.py with RANK/LOCAL_RANK/WORLD_SIZE/MASTER_* set, as
torchrun would; prints one ``RESULT{json}`` line with where things ended up.
"""

from __future__ import annotations

import json
from datetime import timedelta

import torch
import torch.distributed as dist
from accel_neuron import emulator
from accel_neuron.emulated_dist import register_emulated_process_group
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

from accel_abstraction.distributed import destroy_distributed

emulator.install()
register_emulated_process_group()
dist.init_process_group("neuron", timeout=timedelta(seconds=60))
mesh = init_device_mesh("neuron", (2,))  # rank 1 gets neuron:1 made current
rank = dist.get_rank()
out: dict[str, object] = {"current": torch.neuron.current_device()}
t = torch.full((2,), float(rank + 1), device="neuron")
dist.all_reduce(t)
out["all_reduce"] = [str(t.device), t.cpu().tolist()]
model = torch.nn.Linear(3, 2).to("neuron")
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
ddp(torch.randn(4, 3)).sum().backward()  # DDP moves the CPU input to neuron:rank
out["ddp_grad"] = str(model.weight.grad.device)
dt = distribute_tensor(torch.arange(4.0, device="neuron"), mesh, [Shard(0)])
out["dtensor_local"] = [str(dt.to_local().device), dt.to_local().cpu().tolist()]
out["dtensor_full"] = dt.full_tensor().cpu().tolist()
print("RESULT" + json.dumps(out), flush=True)
destroy_distributed()  # both ranks done with their last collective first (gloo underneath)
