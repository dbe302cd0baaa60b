"""ACC199: CUDA environment variable."""

from __future__ import annotations

from .base import Rule

RULE = Rule(
    "ACC199",
    "env",
    "CUDA environment variable",
    None,
    portable=False,
    examples=(
        ('v = os.environ.get("NCCL_DEBUG")', None),
        ('os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"', None),
        ('v = os.environ.get("TORCH_NCCL_BLOCKING_WAIT")', None),
    ),
    counterexamples=('v = os.environ.get("OMP_NUM_THREADS")',),
)
