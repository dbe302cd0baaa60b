"""Small models with a tied weight and a lazy layer, and a few AdamW steps on a device.

Shared by the patch scenarios (``scenarios.py``, run as a script: import it as
``tied_models``) and the neuron plugin's mitigation test
(``plugins/neuron/tests/test_tied_parameters.py``: ``tests.patches.tied_models``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, WIDTH, HEADS, CONTEXT = 64, 32, 4, 16


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH)
        self.attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.ln_2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.mlp(self.ln_2(x))


class TiedLM(nn.Module):
    """GPT-2's shape: token + position embeddings, pre-norm blocks, ``lm_head.weight = wte.weight``."""

    def __init__(self, layers: int = 2) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(layers))
        self.ln_f = nn.LayerNorm(WIDTH)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class LazyNet(nn.Module):
    """Built without input sizes: the first forward materializes ``LazyLinear``/``LazyBatchNorm1d``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.LazyLinear(32), nn.LazyBatchNorm1d(), nn.ReLU(), nn.LazyLinear(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def is_tied(model: TiedLM) -> bool:
    return model.lm_head.weight is model.wte.weight


def train_tied_lm(device: str | torch.device, steps: int = 4, seed: int = 0) -> dict[str, torch.Tensor]:
    """Build on the CPU, move with ``.to(device)``, train ``steps`` AdamW steps; CPU copies of the results."""
    torch.manual_seed(seed)
    model = TiedLM().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.randint(0, VOCAB, (steps, 4, CONTEXT + 1))
    losses = []
    for batch in data.to(device):
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    out = {name: p.detach().cpu() for name, p in model.state_dict().items()}
    out["losses"] = torch.stack(losses).cpu()
    out["tied"] = torch.tensor(is_tied(model))
    out["parameters"] = torch.tensor(sum(p.numel() for p in model.parameters()))
    return out


def train_lazy(device: str | torch.device, steps: int = 3, seed: int = 0) -> dict[str, torch.Tensor]:
    """A lazy model moved before its first forward, then trained: results on the CPU."""
    torch.manual_seed(seed)
    model = LazyNet().to(device)
    lazy_after_to = any(isinstance(p, nn.UninitializedParameter) for p in model.parameters())
    x = torch.randn(steps, 16, 12)
    y = torch.randn(steps, 16, 8)
    if torch.device(device).type != "cpu":  # initialize from the same random stream as the CPU
        torch.get_device_module(device).set_rng_state(torch.get_rng_state())
    model(x[0].to(device))  # materialize, then create the optimizer
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for xb, yb in zip(x.to(device), y.to(device), strict=True):
        loss = F.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    out = {name: t.detach().cpu() for name, t in model.state_dict().items()}
    out["lazy_after_to"] = torch.tensor(lazy_after_to)
    return out
