"""Functions for assert_backends_match's subprocess mode (importable as tests.testing.match_fns:NAME)."""

from __future__ import annotations

import torch

import accel_abstraction as accel


def forward() -> dict[str, object]:
    """A small deterministic computation on the selected device."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(8, 8, generator=g).to(accel.device())
    x = torch.randn(4, 8, generator=g).to(accel.device())
    y = torch.nn.functional.gelu(x @ w).softmax(-1)
    return {"y": y, "total": y.sum(), "inputs": (x, [w])}


def off_by_a_bit() -> tuple[torch.Tensor, ...]:
    """Like the reference on 'cpu'; every other backend changes one element by 1e-3."""
    out = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    if accel.backend().name != "cpu":
        out[1, 2] += 1e-3
    return (out.to(accel.device()),)
