"""ACC172: DistributedDataParallel's ``device_ids`` / ``output_device``, FullyShardedDataParallel's ``device_id``, name a CUDA device.

``DDP(model, device_ids=[rank], output_device=rank)`` is right on CUDA and stops on the cpu
backend: DDP takes no ids for a CPU module. The port asks the selected backend instead,
``device_ids=accel.ddp_device_ids(rank), output_device=accel.ddp_output_device(rank)``
(``[rank]`` / ``rank`` where devices have indices, ``None`` on cpu), the rule the runtime
redirect applies to an unchanged script (:mod:`accel_abstraction.distributed.ddp`).

``FSDP(model, device_id=rank)`` (or ``torch.cuda.current_device()``, ``torch.device("cuda", rank)``)
becomes ``device_id=accel.fsdp_device_id(rank)`` (``accel.fsdp_device_id()`` for the current
device): the backend's device of that index, ``cpu`` on the cpu backend, where FSDP refuses
an index and ``None``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fixes import Fix, expression
from ..guards import CUDA_DEVICE, has_keyword, last_name
from .base import Rule

if TYPE_CHECKING:
    import libcst as cst

    from ..context import ScanContext

#: Wrappers whose ``device_ids`` / ``output_device`` follow DDP's rules.
DDP_NAMES = ("DistributedDataParallel", "DDP")
FSDP_NAMES = ("FullyShardedDataParallel", "FSDP")
IDS = "accel.ddp_device_ids"
OUTPUT = "accel.ddp_output_device"
FSDP_DEVICE = "accel.fsdp_device_id"


def is_ddp(call: ast.Call, qualname: str | None) -> bool:
    """Whether ``call`` constructs DistributedDataParallel (by its resolved or its local name)."""
    return (qualname or "").endswith("DistributedDataParallel") or last_name(call.func) in DDP_NAMES


def is_fsdp(call: ast.Call, qualname: str | None) -> bool:
    """Whether ``call`` constructs FullyShardedDataParallel (by its resolved or its local name)."""
    return (qualname or "").endswith("FullyShardedDataParallel") or last_name(call.func) in FSDP_NAMES


@dataclass(frozen=True, kw_only=True)
class FsdpDevice(Fix):
    """``device_id=X`` -> ``accel.fsdp_device_id(i)``, applied after the fixes inside ``X``: the index
    is read from what they made of it (``accel.device(i)``, ``torch.device(...)`` around it,
    ``"cuda:i"``); ``accel.device()``, ``accel.current_device()`` and ``"cuda"`` give none (the
    current device); anything else is passed as it is."""

    def rewrite(self, node: cst.CSTNode) -> cst.CSTNode:
        from ..cst_edit import call, expr, keep_parens

        node = expression(node)
        index = _index(node.with_changes(lpar=[], rpar=[]))
        return keep_parens(node, expr(FSDP_DEVICE + "()") if index is None else call(FSDP_DEVICE, index))


def _index(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The device index ``node`` names (``None``: the current device)."""
    from ..cst_edit import cst

    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        match = CUDA_DEVICE.match(node.evaluated_value)
        if match is not None:
            return None if match.group(1) is None else cst.Integer(match.group(1))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name):
        name = f"{node.func.value.value}.{node.func.attr.value}"
        args = node.args
        plain = len(args) == 1 and args[0].keyword is None and not args[0].star
        if name == "accel.current_device" or (name in ("accel.device", "torch.device") and not args):
            return None
        if name == "accel.device" and plain:
            return args[0].value
        if name == "torch.device" and plain:
            return _index(args[0].value.with_changes(lpar=[], rpar=[]))
    return node


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


def check_fsdp(scan: ScanContext, call: ast.Call, keyword: ast.keyword, qualname: str | None) -> None:
    """``device_id=...`` of an FSDP construction (not ``None``, not what a port wrote)."""
    value = keyword.value
    if not is_fsdp(call, qualname) or (isinstance(value, ast.Constant) and value.value is None):
        return
    if isinstance(value, ast.Call) and scan.aliases.qualname(value.func) == "accel_abstraction.fsdp_device_id":
        return
    scan.report(value, "ACC172", "FSDP device_id", FsdpDevice(), suggestion=f"{FSDP_DEVICE}(...): cpu on the cpu backend")


def check_ddp_keyword(scan: ScanContext, call: ast.Call, keyword: ast.keyword, qualname: str | None) -> None:
    """``device_ids=`` of a DDP construction, or its ``output_device=`` where it passes no ``device_ids=``: :func:`check_ddp`."""
    if is_ddp(call, qualname) and (keyword.arg == "device_ids" or not has_keyword(call, "device_ids")):
        check_ddp(scan, call)


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
    "DDP device_ids/output_device or FSDP device_id name a CUDA device; a CPU module takes none there",
    "accel.ddp_device_ids(i) / accel.ddp_output_device(i) (None on the cpu backend), accel.fsdp_device_id(i) (cpu there)",
    portable=True,
    visits={"keyword:device_ids": check_ddp_keyword, "keyword:output_device": check_ddp_keyword, "keyword:device_id": check_fsdp},
    examples=(
        (
            "m = DDP(model, device_ids=[local_rank])",
            "m = DDP(model, device_ids=accel.ddp_device_ids(local_rank))",
        ),
        (
            "m = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank], output_device=rank)",
            "m = torch.nn.parallel.DistributedDataParallel(model, device_ids=accel.ddp_device_ids(rank), output_device=accel.ddp_output_device(rank))",
        ),
        ("m = FSDP(model, device_id=torch.cuda.current_device())", "m = FSDP(model, device_id=accel.fsdp_device_id())"),
        ('m = FSDP(model, device_id=torch.device("cuda", rank))', "m = FSDP(model, device_id=accel.fsdp_device_id(rank))"),
        ("m = FullyShardedDataParallel(model, device_id=local_rank)", "m = FullyShardedDataParallel(model, device_id=accel.fsdp_device_id(local_rank))"),
    ),
    counterexamples=(
        "m = DDP(model)",
        "m = FSDP(model, device_id=None)",
        "m = FSDP(model, device_id=accel.fsdp_device_id(rank))",
        "dist.init_process_group(backend=\"gloo\", device_id=None)",
        "m = DDP(model, device_ids=None, output_device=None)",
        "m = DDP(model, device_ids=accel.ddp_device_ids(rank))",
        "torch.distributed.barrier(device_ids=[local_rank])",
    ),
)
