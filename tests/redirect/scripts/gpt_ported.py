"""gpt_cuda.py ported by hand to accel-abstraction: the reference its redirected run must match."""

import argparse

import torch
from tinygpt import GPT, corpus

import accel_abstraction as accel

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--compile", action="store_true")
parser.add_argument("--compile-backend", default="inductor")
args = parser.parse_args()

block_size, batch_size = 16, 8
device = accel.device()
amp_dtype = torch.bfloat16 if accel.is_bf16_supported() else torch.float16
ctx = accel.autocast(dtype=amp_dtype)
torch.manual_seed(1337)
pin = accel.capabilities().pinned_memory
data = corpus()


def next_batch():
    ix = torch.randint(len(data) - block_size - 1, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    if pin:
        x, y = accel.pin_memory(x), accel.pin_memory(y)
    return x.to(device, non_blocking=pin), y.to(device, non_blocking=pin)


model = GPT(vocab=17, block_size=block_size).to(device)
scaler = accel.GradScaler(enabled=amp_dtype == torch.float16)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
if args.compile:
    model = torch.compile(model, backend=args.compile_backend)

accel.reset_peak_memory_stats()
for step in range(args.steps):
    X, Y = next_batch()
    with ctx:
        loss = model(X, Y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    accel.synchronize()
    print(f"step {step} loss {loss.item()!r}")
print(f"max memory allocated: {accel.max_memory_allocated() / 2**20:.1f} MiB")
