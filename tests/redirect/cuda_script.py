"""A small training script written for CUDA, the way users write them. Never edited for the tests.

The redirect tests run it unchanged with ``accel run`` and compare its printed losses with
``cpu_script.py``. Lines ending in ``# site: <api>`` are where the report must list a call.
"""

import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.cuda.manual_seed_all(0)  # site: torch.cuda.manual_seed_all
torch.backends.cudnn.benchmark = True  # site: torch.backends.cudnn.benchmark
print(f"cuda available: {torch.cuda.is_available()}, devices: {torch.cuda.device_count()}")  # site: torch.cuda.is_available; torch.cuda.device_count

device = torch.device("cuda")
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()  # site: Module.cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.cuda.amp.GradScaler()  # site: torch.cuda.amp.GradScaler
x = torch.randn(64, 16, device="cuda:0")  # site: torch.randn(device=cuda)
y = torch.randn(64, 1).to("cuda:0")  # site: Tensor.to(cuda)
bias = torch.zeros(1, device=device)  # site: torch.zeros(device=cuda)
torch.cuda.reset_peak_memory_stats()  # site: torch.cuda.reset_peak_memory_stats

for step in range(5):
    opt.zero_grad()
    with torch.cuda.amp.autocast():  # site: torch.cuda.amp.autocast
        loss = nn.functional.mse_loss(model(x).float() + bias, y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    torch.cuda.synchronize()  # site: torch.cuda.synchronize
    print(f"step {step} loss {loss.item()!r}")

path = os.path.join(tempfile.mkdtemp(), "model.pt")
torch.save(model.state_dict(), path)
model.load_state_dict(torch.load(path, map_location="cuda:0"))  # site: torch.load(map_location=cuda)
with torch.autocast("cuda", dtype=torch.bfloat16):  # site: torch.autocast("cuda")
    final = nn.functional.mse_loss(model(x.cuda()).float() + bias, y)  # site: Tensor.cuda()
print(f"final loss {final.item()!r}")
print(f"peak memory: {torch.cuda.max_memory_allocated()} bytes")  # site: torch.cuda.max_memory_allocated
