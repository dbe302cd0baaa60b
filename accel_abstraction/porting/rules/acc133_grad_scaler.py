"""ACC133: CUDA GradScaler."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..apis import ENABLED, call
from ..fixes import RenameCall
from ..guards import arg_of, has_keyword, str_value
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext

#: torch's GradScaler, by its qualified names.
GRAD_SCALER = frozenset({"torch.amp.GradScaler", "torch.GradScaler", "torch.amp.grad_scaler.GradScaler"})


def check_grad_scaler(scan: ScanContext, node: ast.Call) -> None:
    """``torch.amp.GradScaler("cuda", ...)`` -> ``accel.GradScaler(...)``."""
    dev, where = arg_of(node, 0, "device")
    if dev is None or str_value(dev) == "cuda":
        if dev is not None:
            scan.done.add(id(dev))
        scan.report(node, "ACC133", None, RenameCall(callee="accel.GradScaler", drop=where if dev is not None else None,
                    guard="enabled" if has_keyword(node, "enabled") else ""))  # fmt: skip


RULE = Rule(
    "ACC133",
    "amp",
    "CUDA GradScaler",
    "accel.GradScaler(...)",
    portable=True,
    calls=dict.fromkeys(GRAD_SCALER, check_grad_scaler),
    apis=(
        call("torch.cuda.amp.GradScaler", "accel.GradScaler", ENABLED),
        call("torch.cuda.amp.grad_scaler.GradScaler", "accel.GradScaler", ENABLED),
    ),
    examples=(
        (
            "s = torch.cuda.amp.GradScaler(enabled=fp16)",
            "s = accel.GradScaler(enabled=fp16 and accel.is_accelerator_available())",
        ),
    ),
    counterexamples=('s = torch.amp.GradScaler("cpu")',),
)
