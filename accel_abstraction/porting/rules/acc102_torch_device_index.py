"""ACC102: torch.device("cuda", index)."""

from __future__ import annotations

from .base import Rule

RULE = Rule(
    "ACC102",
    "device-string",
    'torch.device("cuda", index)',
    "accel.device(index)",
    portable=True,
    examples=(('d = torch.device("cuda", rank)', "d = accel.device(rank)"),),
    counterexamples=('d = torch.device("cpu", 0)',),
)
