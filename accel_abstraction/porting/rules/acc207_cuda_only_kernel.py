"""ACC207: CUDA-only kernel or capability."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..apis import manual
from ..guards import last_name, str_value
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext

_FUSED_HINT = "fused optimizer kernels exist per device; keep fused only where the backend has them"


def check_fused(scan: ScanContext, value: ast.AST) -> None:
    """``fused=True`` / ``{"fused": True}``: a fused optimizer kernel."""
    if isinstance(value, ast.Constant) and value.value is True:
        scan.report(value, "ACC207", "fused=True", suggestion=_FUSED_HINT)


def fused_device_test(scan: ScanContext, node: ast.AST) -> None:
    """A device-type test inside a value that chooses a fused kernel (``use_fused = device_type == "cuda"``)."""
    scan.report(node, "ACC207", "fused kernel chosen because the device is CUDA",
                suggestion="fused kernels exist per device; ask a person which one the backend has")  # fmt: skip


def check_fused_argument(scan: ScanContext, call: ast.Call, keyword: ast.keyword, qualname: str | None) -> None:
    check_fused(scan, keyword.value)


#: torchao's FP8 training entry point (``torchao.float8``), and copies of its API under other modules (nanochat's ``nanochat.fp8``).
_FP8_TRAINING = "convert_to_float8_training"


def check_fp8_training(scan: ScanContext, node: ast.AST, qualname: str) -> bool:
    """``convert_to_float8_training(model, ...)``: its layers run FP8 matmuls (``torch._scaled_mm``), a CUDA capability."""
    if qualname.rpartition(".")[2] != _FP8_TRAINING:
        return False
    scan.report(node, "ACC207", f"{qualname}: FP8 training", suggestion="FP8 matmuls (torch._scaled_mm) are a CUDA capability here; guard with accel.capabilities()")
    return True


def fused_choices(nodes: Iterable[ast.AST]) -> set[int]:
    """ids of nodes inside a value that chooses a fused kernel (``use_fused = ...``, ``fused=...``)."""
    ids: set[int] = set()
    for node in nodes:
        values: list[ast.AST] = []
        if isinstance(node, ast.Assign) and any("fused" in (last_name(t) or "") for t in node.targets):
            values.append(node.value)
        elif isinstance(node, ast.keyword) and node.arg == "fused":
            values.append(node.value)
        elif isinstance(node, ast.Dict):
            values += [v for k, v in zip(node.keys, node.values, strict=True) if str_value(k) == "fused"]
        for value in values:
            ids.update(id(sub) for sub in ast.walk(value))
    return ids


RULE = Rule(
    "ACC207",
    "manual",
    "CUDA-only kernel or capability",
    "guard with accel.capabilities()",
    portable=False,
    visits={"keyword:fused": check_fused_argument, "dict:fused": check_fused, "reference": check_fp8_training},
    apis=(
        manual("torch._scaled_mm", "FP8 matmul is a capability question; guard with accel.capabilities()"),
        manual(
            "torch.nn.DataParallel",
            "its scatter/gather are CUDA-only; use DistributedDataParallel under torchrun",
        ),
        manual(
            "torch.nn.parallel.DataParallel",
            "its scatter/gather are CUDA-only; use DistributedDataParallel under torchrun",
        ),
    ),
    examples=(
        ("opt = torch.optim.AdamW(params, fused=True)", None),
        ("use_fused = device_type == 'cuda'", None),
        ("y = torch._scaled_mm(a, b, scale_a=s, scale_b=s)", None),
        ("from torchao.float8 import convert_to_float8_training\nconvert_to_float8_training(model)", None),
        ("from nanochat.fp8 import convert_to_float8_training\nconvert_to_float8_training(model, config=c)", None),
    ),
    counterexamples=(
        "opt = torch.optim.AdamW(params, fused=False)",
        "def convert_to_float8_training(m):\n    return m\nconvert_to_float8_training(model)",
    ),
)
