"""Small models with a tied weight and a lazy layer, and a few AdamW steps on a device.

Shared by the patch scenarios (``scenarios.py``, run as a script: import it as
``tied_models``) and the neuron plugin's mitigation test
(``plugins/neuron/tests/test_tied_parameters.py``: ``tests.patches.tied_models``).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, WIDTH, HEADS, CONTEXT = 64, 32, 4, 16


def _tinygpt() -> types.ModuleType:
    """``tests/redirect/scripts/tinygpt.py``, the GPT of the redirect scripts (they import it as a
    top-level module from their folder, so it is loaded here by its path)."""
    path = Path(__file__).resolve().parent.parent / "redirect" / "scripts" / "tinygpt.py"
    if "tests_tinygpt" not in sys.modules:  # registered, so that its classes pickle
        spec = importlib.util.spec_from_file_location("tests_tinygpt", path)
        assert spec is not None and spec.loader is not None, path
        sys.modules["tests_tinygpt"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["tests_tinygpt"]


class TiedLM(_tinygpt().GPT):  # type: ignore[misc]
    """GPT-2's shape (tinygpt's ``GPT``: token + position embeddings, pre-norm blocks) with
    ``lm_head.weight = wte.weight``. ``model(idx, targets)`` is the cross-entropy loss."""

    def __init__(self, layers: int = 2) -> None:
        super().__init__(VOCAB, CONTEXT, WIDTH, HEADS, layers)
        self.lm_head.weight = self.wte.weight


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
        loss = model(batch[:, :-1], batch[:, 1:].contiguous())
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
