"""A single-GPU speed-tuned training script, written by us in the shape of the real ones
(rasbt/LLMs-from-scratch ch05/10_llm-training-speed/01_opt_single_gpu.py, whose 124M-parameter
configuration is fixed in its ``__main__`` and too large for the e2e runs): ``torch.compile``, a
bf16 model, fused AdamW, CUDA-event timing and a compute-capability check, each with the CPU
fallback such scripts have. Never edited to suit the port; ``accel port`` runs on it as on
third-party code (benchmarks/realcode/e2e.py).
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--compile-backend", default="inductor")
args = parser.parse_args()

torch.manual_seed(123)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"Using {device}")
if torch.cuda.is_available():
    capability = torch.cuda.get_device_capability()
    if capability[0] >= 7:  # tensor cores
        torch.set_float32_matmul_precision("high")
        print("Uses tensor cores")


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=32, context=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.block = nn.TransformerEncoderLayer(dim, 2, 4 * dim, dropout=0.0, batch_first=True)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.head(self.block(self.tok(idx) + self.pos(pos)))


model = TinyLM()
model = torch.compile(model, backend=args.compile_backend)
model.to(device).to(torch.bfloat16)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1, fused=True)

g = torch.Generator().manual_seed(0)
data = torch.randint(0, 64, (args.steps, 4, 17), generator=g)

use_cuda = device.type == "cuda"
if use_cuda:
    t_start = torch.cuda.Event(enable_timing=True)
    t_end = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t_start.record()
else:
    t0 = time.time()

for step in range(args.steps):
    batch = data[step].to(device)
    inp, tgt = batch[:, :-1], batch[:, 1:]
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inp).flatten(0, 1).float(), tgt.flatten())
    loss.backward()
    optimizer.step()
    if use_cuda:
        t_end.record()
        torch.cuda.synchronize()
        elapsed = t_start.elapsed_time(t_end) / 1000
        t_start.record()
    else:
        elapsed = time.time() - t0
        t0 = time.time()
    print(f"step {step} loss {loss.item():.6f} ({elapsed * 1000:.0f} ms)")

if torch.cuda.is_available():
    print(f"Allocated memory: {torch.cuda.memory_allocated() / 1024**3:.4f} GB")
