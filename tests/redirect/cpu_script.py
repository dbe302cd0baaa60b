"""The same training as ``cuda_script.py``, written by hand for the CPU (the reference numbers)."""

import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)
print("cuda available: True, devices: 1")

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(64, 16)
y = torch.randn(64, 1)
bias = torch.zeros(1)

for step in range(5):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(model(x).float() + bias, y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item()!r}")

path = os.path.join(tempfile.mkdtemp(), "model.pt")
torch.save(model.state_dict(), path)
model.load_state_dict(torch.load(path))
with torch.autocast("cpu", dtype=torch.bfloat16):
    final = nn.functional.mse_loss(model(x).float() + bias, y)
print(f"final loss {final.item()!r}")
