"""A training script written for CUDA, as found in the wild: nobody ported it, and it must stay so.

Shaped after single-file GPT trainers (nanoGPT's train.py and the like): picks ``cuda`` when
``torch.cuda.is_available()``, seeds ``torch.cuda``, sets cuDNN flags, moves the model with
``.to(device)`` and batches with ``.cuda()``-style calls, wraps the forward pass in
``torch.autocast(device_type='cuda')`` when asked, scales the loss with
``torch.cuda.amp.GradScaler``, synchronizes to time the step, and prints one line per
iteration: ``iter 3: loss 2.7312, time 12.04ms``. It never calls accel-abstraction: the
parity tests read its losses from that line (``accel parity --redirect --metric ...``).

``--nan-from N``: from iteration N on the printed loss is ``nan`` (a diverged run).
"""

import argparse
import time
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--max-iters", type=int, default=8)
parser.add_argument("--amp", action="store_true")
parser.add_argument("--nan-from", type=int, default=-1)
args = parser.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
device_type = "cuda" if "cuda" in device else "cpu"
torch.manual_seed(1337)
torch.cuda.manual_seed(1337)
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
ctx = torch.autocast(device_type=device_type, dtype=torch.bfloat16) if args.amp else nullcontext()

vocab, block, width = 32, 16, 64
data = torch.randint(vocab, (4096,))


def get_batch(batch_size=8):
    ix = torch.randint(len(data) - block - 1, (batch_size,))
    x = torch.stack([data[i : i + block] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block] for i in ix])
    if device_type == "cuda":
        return x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    return x, y


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(vocab, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.head = nn.Linear(width, vocab)

    def forward(self, idx, targets):
        h = self.emb(idx)
        logits = self.head(h + self.mlp(h))
        return logits, F.cross_entropy(logits.view(-1, vocab), targets.view(-1))


model = TinyLM().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
scaler = torch.cuda.amp.GradScaler(enabled=False)  # bf16 needs no loss scaling
print(f"training on {device} ({torch.cuda.device_count()} device(s))")
for iter_num in range(args.max_iters):
    t0 = time.time()
    X, Y = get_batch()
    with ctx:
        logits, loss = model(X, Y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    dt = time.time() - t0
    lossf = loss.item() if iter_num < args.nan_from or args.nan_from < 0 else float("nan")
    print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms")
print(f"max memory allocated: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
