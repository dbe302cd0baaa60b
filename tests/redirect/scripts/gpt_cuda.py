"""A GPT training loop written for CUDA after the shape of nanoGPT's train.py. Never edited for the tests.

Pinned batches moved with non_blocking copies, TF32/flash switches, bf16 chosen from the
device capability, memory logging, CUDA-event timing, NVTX ranges and an optional ``--compile``.
"""

import argparse
import time
from contextlib import nullcontext

import torch
from tinygpt import GPT, corpus

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--compile", action="store_true")
parser.add_argument("--compile-backend", default="inductor")
args = parser.parse_args()

block_size, batch_size = 16, 8
device = "cuda" if torch.cuda.is_available() else "cpu"
device_type = "cuda" if "cuda" in device else "cpu"
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
torch.manual_seed(1337)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
if torch.cuda.get_device_capability()[0] >= 8:
    torch.backends.cuda.enable_flash_sdp(True)
props = torch.cuda.get_device_properties(0)
print(f"device {props.name} with {props.total_memory // 2**20} MiB, {props.multi_processor_count} SMs")

data = corpus()


def get_batch():
    ix = torch.randint(len(data) - block_size - 1, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    if device_type == "cuda":
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    else:
        x, y = x.to(device), y.to(device)
    return x, y


model = GPT(vocab=17, block_size=block_size).to(device)
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
if args.compile:
    model = torch.compile(model, backend=args.compile_backend)

torch.cuda.reset_peak_memory_stats()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0 = time.time()
for step in range(args.steps):
    torch.cuda.nvtx.range_push(f"step {step}")
    X, Y = get_batch()
    start.record()
    with ctx:
        loss = model(X, Y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    end.record()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    print(f"step {step} loss {loss.item()!r}")
    print(f"step {step} time {start.elapsed_time(end):.1f} ms")
print(f"max memory allocated: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
torch.cuda.empty_cache()
