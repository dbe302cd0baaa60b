"""ACC205: CUDA graphs."""

from __future__ import annotations

from ..apis import manual
from .base import Rule

RULE = Rule(
    "ACC205",
    "manual",
    "CUDA graphs",
    "guard with accel.capabilities().graphs",
    portable=False,
    apis=(
        manual("torch.cuda.graphs", "CUDA graphs are CUDA-only; guard with accel.capabilities().graphs"),
        manual("torch.cuda.graph", "CUDA graphs are CUDA-only; guard with accel.capabilities().graphs"),
        manual("torch.cuda.CUDAGraph", "CUDA graphs are CUDA-only; guard with accel.capabilities().graphs"),
        manual(
            "torch.cuda.make_graphed_callables",
            "CUDA graphs are CUDA-only; guard with accel.capabilities().graphs",
        ),
        manual(
            "torch.cuda.graph_pool_handle",
            "CUDA graphs are CUDA-only; guard with accel.capabilities().graphs",
        ),
    ),
    examples=(("g = torch.cuda.CUDAGraph()", None),),
)
