"""ACC192: CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..fixes import Replace
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext


def visible_devices_name(scan: ScanContext, node: ast.AST, name: str, paren: bool) -> bool:
    """``"CUDA_VISIBLE_DEVICES"`` as a variable's name; the cpu backend has no such variable
    (``visible_devices_env()`` raises there), so the port keeps the name it had there."""
    if name != "CUDA_VISIBLE_DEVICES":
        return False
    quote = (scan.segment(node) or '"')[0]
    scan.report(node, "ACC192", None, Replace(text="accel.visible_devices_env()", guard="value" if paren else "bare",
                otherwise=f"{quote}CUDA_VISIBLE_DEVICES{quote}"))  # fmt: skip
    return True

RULE = Rule(
    "ACC192",
    "env",
    "CUDA_VISIBLE_DEVICES",
    "accel.visible_devices_env()",
    portable=True,
    examples=(
        (
            'v = os.environ["CUDA_VISIBLE_DEVICES"]',
            'v = os.environ[accel.visible_devices_env() if accel.is_accelerator_available() else "CUDA_VISIBLE_DEVICES"]',
        ),
    ),
)
