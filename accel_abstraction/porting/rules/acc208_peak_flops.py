"""ACC208: hard-coded GPU peak FLOPs or memory bandwidth (MFU, MBU)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext


def about_peak(name: str) -> bool:
    """Whether an assigned name is about FLOPs (``flops_promised``) or a peak bandwidth (``PEAK_BANDWIDTH``)."""
    lowered = name.lower()
    return "flops" in lowered or ("peak" in lowered and "bandwidth" in lowered)


def _number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _unknown(value: ast.AST) -> bool:
    """A placeholder for "no figure" (``float("inf")``, ``math.inf``, ``None``, ``0``, ``-1``): no GPU's peak in it."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        value = value.operand
    if isinstance(value, ast.Constant):
        return value.value is None or (_number(value) and value.value in (0, 1))
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "float":
        return len(value.args) == 1 and isinstance(value.args[0], ast.Constant) and str(value.args[0].value).lower().lstrip("+-") in ("inf", "nan")
    return isinstance(value, ast.Attribute) and value.attr in ("inf", "nan")


def check_peak_flops(scan: ScanContext, target: ast.AST, name: str, value: ast.AST) -> None:
    """``peak_flops = 312e12``, ``gpu_peak_flops = lookup(torch.cuda.get_device_name())``, a table of GPU
    names and peak figures (a GPU-sized number in it); a placeholder for "unknown" (``float("inf")``) is not one."""
    lowered = name.lower()
    table = isinstance(value, (ast.Tuple, ast.List, ast.Dict, ast.Set))
    numbers = [n.value for n in (ast.walk(value) if table else (value,)) if _number(n)]  # type: ignore[attr-defined]
    big = bool(numbers) and max(numbers) >= 1e11
    if big or (("peak" in lowered or "promised" in lowered) and not _unknown(value)):
        scan.report(target, "ACC208", name, suggestion="peak FLOPs and bandwidth differ per device; take them from the selected device, not a GPU table")


RULE = Rule(
    "ACC208",
    "manual",
    "hard-coded GPU peak FLOPs or memory bandwidth (MFU, MBU)",
    "take peak FLOPs and bandwidth from the selected device",
    portable=False,
    examples=(
        ("flops_promised = 312e12", None),
        ('PEAK_FLOPS = ((["a100"], 312e12), (["h100"], 989e12))', None),
        ('_PEAK_BANDWIDTH_TABLE = ((["h100"], 3.35e12), (["a40"], 696e9))', None),
    ),
    counterexamples=(
        "flops_per_token = 6 * n_params",
        # "unknown" (MFU not meaningful on the CPU): no GPU's figure (nanochat's base_train.py)
        'gpu_peak_flops = float("inf")',
        "peak_flops = None",
    ),
)
