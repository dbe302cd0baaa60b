# ruff: noqa
"""Mixed precision the CUDA way, in every spelling seen in the wild."""
import torch
from torch.cuda.amp import GradScaler, autocast

model = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = GradScaler()  # expect: ACC133
scaler2 = torch.cuda.amp.GradScaler(init_scale=1024.0)  # expect: ACC133
scaler3 = torch.amp.GradScaler("cuda")  # expect: ACC133
scaler4 = torch.amp.GradScaler()  # expect: ACC133
bf16 = torch.cuda.is_bf16_supported()  # expect: ACC124

for step in range(2):
    x = torch.randn(4, 16)
    with autocast(dtype=torch.float16):  # expect: ACC131
        loss = model(x).sum()
    with torch.cuda.amp.autocast(enabled=True):  # expect: ACC131
        loss = model(x).sum()
    with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: ACC132
        loss = model(x).sum()
    with torch.autocast(device_type="cuda"):  # expect: ACC132
        loss = model(x).sum()
    # Already generic: not reported.
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        loss = model(x).sum()
    with torch.amp.autocast("cpu"):
        loss = model(x).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


@torch.cuda.amp.custom_fwd  # expect: ACC139
def forward(ctx, x):
    return x
