"""ACC203: CuPy."""

from __future__ import annotations

from ..apis import package
from .base import Rule

RULE = Rule(
    "ACC203",
    "manual",
    "CuPy",
    "torch operations on accel.device()",
    portable=False,
    apis=(package("cupy", "CuPy arrays live on CUDA devices; use torch on accel.device()"),),
    examples=(("import cupy", None),),
)
