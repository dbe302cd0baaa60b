"""ACC199: CUDA environment variable, named directly or through a variable or a tuple that reaches os.environ / putenv."""

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
        ('key, value = "NCCL_DEBUG", "INFO"\nos.environ[key] = value', None),
        ('for k, v in (("NCCL_P2P_DISABLE", "1"),):\n    os.putenv(k, v)', None),
    ),
    counterexamples=(
        'v = os.environ.get("OMP_NUM_THREADS")',
        'key, value = "OMP_NUM_THREADS", "1"\nos.environ[key] = value',
        'label = "NCCL_DEBUG"\nprint(label)',
    ),
)
