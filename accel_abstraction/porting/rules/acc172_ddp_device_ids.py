"""ACC172: DistributedDataParallel's ``device_ids`` / ``output_device`` name a CUDA device.

``DDP(model, device_ids=[rank], output_device=rank)`` is right on CUDA and stops on the cpu
backend: DDP takes no ids for a CPU module. The port asks the selected backend instead,
``device_ids=accel.ddp_device_ids(rank), output_device=accel.ddp_output_device(rank)``
(``[rank]`` / ``rank`` where devices have indices, ``None`` on cpu), the rule the runtime
redirect applies to an unchanged script (:mod:`accel_abstraction.distributed.ddp`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fixes import Fix, expression
from ..guards import last_name
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst

    from ..context import ScanContext

#: Wrappers whose ``device_ids`` / ``output_device`` follow DDP's rules.
DDP_NAMES = ("DistributedDataParallel", "DDP")
IDS = "accel.ddp_device_ids"
OUTPUT = "accel.ddp_output_device"


def is_ddp(call: ast.Call, qualname: str | None) -> bool:
    """Whether ``call`` constructs DistributedDataParallel (by its resolved or its local name)."""
    return (qualname or "").endswith("DistributedDataParallel") or last_name(call.func) in DDP_NAMES


@dataclass(frozen=True, kw_only=True)
class DdpDevices(Fix):
    """``[a, b]`` -> ``accel.ddp_device_ids(a, b)`` (``list_form``), or ``x`` -> ``accel.ddp_output_device(x)``."""

    list_form: bool

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from ..cst_edit import Unapplied, call, cst

        node = expression(node)
        if not self.list_form:
            return call(OUTPUT, node.with_changes(lpar=[], rpar=[]))
        if not isinstance(node, (cst.List, cst.Tuple)) or any(isinstance(e, cst.StarredElement) for e in node.elements):
            raise Unapplied
        return call(IDS, *(e.value for e in node.elements))


def _names_a_device(node: ast.AST) -> bool:
    """An entry that names a device or an index (not ``None``, not ``*ids``)."""
    return not (isinstance(node, ast.Constant) and node.value is None) and not isinstance(node, ast.Starred)


def _ported(scan: ScanContext, node: ast.AST) -> bool:
    """``accel.ddp_output_device(...)``: what a port wrote."""
    return isinstance(node, ast.Call) and scan.aliases.qualname(node.func) == "accel_abstraction.ddp_output_device"


def check_ddp(scan: ScanContext, call: ast.Call) -> None:
    """``device_ids=[...]`` and ``output_device=...`` of a DDP construction."""
    for kw in call.keywords:
        value = kw.value
        if kw.arg == "device_ids" and isinstance(value, (ast.List, ast.Tuple)) and value.elts:
            if all(_names_a_device(e) for e in value.elts):
                scan.report(value, "ACC172", "device_ids", DdpDevices(list_form=True),
                            suggestion=f"{IDS}(...): None on the cpu backend")  # fmt: skip
        elif kw.arg == "output_device" and _names_a_device(value) and not _ported(scan, value):
            scan.report(value, "ACC172", "output_device", DdpDevices(list_form=False),
                        suggestion=f"{OUTPUT}(...): None on the cpu backend")  # fmt: skip


RULE = Rule(
    "ACC172",
    "distributed",
    "DDP device_ids/output_device name a CUDA device; DDP takes none for a CPU module",
    "accel.ddp_device_ids(i) / accel.ddp_output_device(i) (None on the cpu backend)",
    portable=True,
    examples=(
        (
            "m = DDP(model, device_ids=[local_rank])",
            "m = DDP(model, device_ids=accel.ddp_device_ids(local_rank))",
        ),
        (
            "m = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank], output_device=rank)",
            "m = torch.nn.parallel.DistributedDataParallel(model, device_ids=accel.ddp_device_ids(rank), output_device=accel.ddp_output_device(rank))",
        ),
    ),
    counterexamples=(
        "m = DDP(model)",
        "m = DDP(model, device_ids=None, output_device=None)",
        "m = DDP(model, device_ids=accel.ddp_device_ids(rank))",
        "torch.distributed.barrier(device_ids=[local_rank])",
    ),
)
