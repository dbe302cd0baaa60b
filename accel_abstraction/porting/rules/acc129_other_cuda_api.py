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
    apis=(
        manual("torch.cuda", "no portable equivalent"),
        # accel run answers False (no CUDA graph is captured on another backend); no accel call says so
        manual("torch.cuda.is_current_stream_capturing", "no portable equivalent; False wherever CUDA graphs are not used"),
    ),
    examples=(("torch.cuda.ipc_collect()", None),),
)
