"""ACC205: CUDA graphs."""

from __future__ import annotations

from ..apis import manual
from .base import Rule

_HINT = "CUDA graphs are CUDA-only; guard with accel.capabilities().graphs"

RULE = Rule(
    "ACC205",
    "manual",
    "CUDA graphs",
    "guard with accel.capabilities().graphs",
    portable=False,
    apis=(
        *(
            manual(f"torch.cuda.{name}", _HINT)
            for name in ("graphs", "graph", "CUDAGraph", "make_graphed_callables", "graph_pool_handle")
        ),
    ),
    examples=(("g = torch.cuda.CUDAGraph()", None),),
)
