"""ACC199: CUDA environment variable, named directly or through a variable or a tuple that reaches os.environ / putenv."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext

#: Variables read by CUDA and its libraries (cuBLAS, cuDNN, NCCL, ...), by name prefix.
_CUDA_ENV_PREFIXES = ("CUDA_", "NCCL_", "CUDNN_", "CUBLAS_", "CUBLASLT_", "CUFFT_", "CURAND_", "CUSPARSE_", "NVIDIA_", "NVTE_")  # accel: ignore


def cuda_env_name(scan: ScanContext, node: ast.AST, name: str) -> None:
    """A variable only CUDA or one of its libraries reads (``NCCL_DEBUG``, ``TORCH_NCCL_BLOCKING_WAIT``)."""
    if name.startswith(_CUDA_ENV_PREFIXES) or "_CUDA_" in name or "_NCCL_" in name or "_CUDNN_" in name:
        scan.report(node, "ACC199", name, suggestion="only CUDA reads it; set the selected backend's own variable")

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
