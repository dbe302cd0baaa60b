"""A CUDA training script that samples with a device generator at its last step (as GPT scripts do).

Trains a tiny bigram model a few steps, then draws tokens with ``torch.multinomial`` and
``torch.randn`` from ``torch.Generator(device="cuda")``; prints them as JSON.
"""

import json

import torch
import torch.nn.functional as F

device = "cuda"
torch.manual_seed(0)
vocab = 11
model = torch.nn.Embedding(vocab, vocab).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
data = (torch.arange(64) % vocab).to(device)
for _ in range(5):
    loss = F.cross_entropy(model(data[:-1]), data[1:])
    loss.backward()
    opt.step()
    opt.zero_grad()

g = torch.Generator(device=device)
g.manual_seed(42)
idx = torch.zeros(1, dtype=torch.long, device=device)
tokens = []
with torch.no_grad():
    for _ in range(8):
        probs = F.softmax(model(idx[-1:]), dim=-1)
        nxt = torch.multinomial(probs, 1, generator=g)[0]
        idx = torch.cat([idx, nxt])
        tokens.append(int(nxt))
noise = torch.randn(3, generator=g, device=device)
print("SAMPLES" + json.dumps({"tokens": tokens, "noise": noise.tolist(), "device": str(g.device)}))
