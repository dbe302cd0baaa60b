"""ACC104: bare integer device means a CUDA device."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..cli_options import device_option
from ..fixes import Fix, expression
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst

    from ..context import ScanContext


@dataclass(frozen=True, kw_only=True)
class WrapDevice(Fix):
    """The expression ``e`` (a device ordinal) becomes ``accel.device(e)``."""

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from ..cst_edit import call, keep_parens

        node = expression(node)
        return keep_parens(
            node, call("accel.device", node.with_changes(lpar=[], rpar=[]) if node.lpar else node)
        )






def cli_option(scan: ScanContext, node: ast.Call, options: list[str]) -> None:
    """``add_argument("--device", type=int, default=0)``: an integer default is a CUDA ordinal (see :mod:`.cli_options`)."""
    option = device_option(options)
    if option is None:
        return
    for kw in node.keywords:
        value = kw.value
        if kw.arg == "default" and isinstance(value, ast.Constant) and type(value.value) is int and type(value.value) is not bool:
            scan.report(value, "ACC104", f"{option} defaults to {value.value}, a CUDA device ordinal",
                        suggestion=f"take a device string; run with `{option} <accel.device_type()>` where you gave an ordinal")  # fmt: skip


RULE = Rule(
    "ACC104",
    "device-string",
    "bare integer device means a CUDA device",
    "accel.device(index)",
    portable=True,
    examples=(
        ("y = x.to(local_rank)", "y = x.to(accel.device(local_rank))"),
        ("d = torch.device(0)", "d = accel.device(0)"),
        ("torch.distributed.barrier(device_ids=[local_rank])", None),
        ('p.add_argument("--device", type=int, default=0)', None),
        ("def train(model, gpu=0):\n    pass", None),
    ),
    counterexamples=(
        "def train(model, rank=0, world_size=1):\n    pass",
        "def train(model, device=None):\n    pass",
        "m = DDP(model, device_ids=[local_rank])",
        "y = x.to(torch.float16)",
        'p.add_argument("--epochs", type=int, default=0)',
    ),
)
