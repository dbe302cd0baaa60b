"""ACC171: "nccl" process-group backend."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from ..fixes import Replace
from ..guards import arg_of, str_value
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext

#: Calls that create a process group (their backend argument is checked).
PROCESS_GROUP = frozenset({"torch.distributed.init_process_group", "torch.distributed.new_group"})


def check_process_group(scan: ScanContext, node: ast.Call) -> None:
    """``init_process_group("nccl")``: the backend argument."""
    backend, _ = arg_of(node, 0, "backend")
    backend_value(scan, backend)


#: Names whose value is a process-group backend (``backend``, ``dist_backend``).
BACKEND_NAME = re.compile(r"(^|_)backend$", re.IGNORECASE)
#: ``torch.distributed.Backend.NCCL``: the enum's spelling of ``"nccl"``.
_BACKEND_ENUM = frozenset({"torch.distributed.Backend.NCCL", "torch.distributed.distributed_c10d.Backend.NCCL"})


def check_nccl_string(scan: ScanContext, node: ast.Constant) -> None:
    """``"nccl"`` wherever it stands: a process-group backend."""
    if node.value in ("nccl", "NCCL"):
        backend_value(scan, node)


def check_backend_enum(scan: ScanContext, node: ast.AST, qualname: str) -> bool:
    """``dist.Backend.NCCL``."""
    if qualname not in _BACKEND_ENUM:
        return False
    scan.report(node, "ACC171", "dist.Backend.NCCL", Replace(text="accel.dist_backend()"), suggestion="accel.dist_backend()")
    return True


def backend_value(scan: ScanContext, node: ast.AST | None) -> None:
    """Report ``node`` if it is a process-group backend string naming nccl."""
    if isinstance(node, ast.IfExp):
        backend_value(scan, node.body)
        backend_value(scan, node.orelse)
        return
    value = str_value(node)
    if node is None or value is None or "nccl" not in value.lower() or id(node) in scan.done:
        return
    scan.done.add(id(node))
    if value.lower() == "nccl" and id(node) in scan.compared:
        # `args.dist_backend == "nccl"` asks "the accelerator's collective library?": on the cpu backend it
        # keeps comparing with "nccl" (a program started there with --dist-backend gloo answers False, as before)
        quote = (scan.segment(node) or '"')[0]
        scan.report(node, "ACC171", None, Replace(text="accel.dist_backend()", guard="value", otherwise=f"{quote}{value}{quote}"),
                    suggestion=f"accel.dist_backend() if accel.is_accelerator_available() else {value!r}")  # fmt: skip
    elif value.lower() == "nccl":
        scan.report(node, "ACC171", None, Replace(text="accel.dist_backend()"))
    else:
        scan.report(node, "ACC171", "backend string names nccl alongside others")


RULE = Rule(
    "ACC171",
    "distributed",
    '"nccl" process-group backend',
    "accel.dist_backend()",
    portable=True,
    calls=dict.fromkeys(PROCESS_GROUP, check_process_group),
    visits={"string": check_nccl_string, "reference": check_backend_enum},
    examples=(
        (
            'torch.distributed.init_process_group("nccl")',
            "torch.distributed.init_process_group(accel.dist_backend())",
        ),
        (
            'p.add_argument("--dist-backend", default="nccl")',
            'p.add_argument("--dist-backend", default=accel.dist_backend())',
        ),
        (
            'ok = args.dist_backend == "nccl"',
            'ok = args.dist_backend == (accel.dist_backend() if accel.is_accelerator_available() else "nccl")',
        ),
        (
            'if dist.get_backend() == "nccl":\n    pass',
            'if dist.get_backend() == (accel.dist_backend() if accel.is_accelerator_available() else "nccl"):',
        ),
        (
            'torch.distributed.init_process_group(backend="NCCL")',
            "torch.distributed.init_process_group(backend=accel.dist_backend())",
        ),
        ("b = torch.distributed.Backend.NCCL", "b = accel.dist_backend()"),
    ),
    counterexamples=(
        'print("nccl backend needs GPUs")',
        'ok = "nccl" in value',
        'ok = name == "nccl"',
        'from deepspeed.accelerator import get_accelerator\nok = get_accelerator().communication_backend_name() == "nccl"',
    ),
)
