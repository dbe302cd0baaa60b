"""ACC129: torch.cuda API without a portable equivalent."""

from __future__ import annotations

from ..apis import manual
from .base import Rule

RULE = Rule(
    "ACC129",
    "cuda-api",
    "torch.cuda API without a portable equivalent",
    None,
    portable=False,
    apis=(manual("torch.cuda", "no portable equivalent"),),
    examples=(("torch.cuda.ipc_collect()", None),),
)
