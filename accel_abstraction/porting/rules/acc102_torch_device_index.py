"""ACC102: torch.device("cuda", index)."""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING

from ..fixes import RenameCall
from ..guards import CUDA_DEVICE, RANK_NAME, arg_of, last_name, str_value
from . import acc101_cuda_device_string as acc101
from . import acc104_integer_device as acc104
from .acc103_runtime_device_string import DeviceFrom
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext


def torch_device(scan: ScanContext, node: ast.Call) -> None:
    """``torch.device("cuda", i)``, ``torch.device("cuda:0")``, ``torch.device(0)``, ``torch.device(f"cuda:{i}")``."""
    dev, where = arg_of(node, 0, "type")
    value = str_value(dev)
    if value is None:
        if (isinstance(dev, ast.Constant) and type(dev.value) is int) or (
            isinstance(dev, (ast.Name, ast.Attribute)) and RANK_NAME.match(last_name(dev) or "")
        ):
            if len(node.args) == 1 and not node.keywords:
                # torch.device(0) / torch.device(local_rank) mean a CUDA device
                acc104.ordinal_device_call(scan, node, scan.segment(dev) or "")
            return
        before = len(scan.findings)
        scan.device_value(dev)
        if len(node.args) == 1 and not node.keywords:
            # torch.device(f"cuda:{i}") becomes accel.device(i), not torch.device(accel.device(i))
            for i in range(before, len(scan.findings)):
                found = scan.findings[i]
                if isinstance(found.fix, DeviceFrom):
                    scan.findings[i] = dataclasses.replace(found, fix=found.fix.at(scan.span(node)))
        return
    match = CUDA_DEVICE.match(value)
    if match is None:
        return
    assert dev is not None
    scan.done.add(id(dev))
    index, _ = arg_of(node, 1, "index")
    if index is not None and value == "cuda":
        scan.report(node, "ACC102", None, RenameCall(callee="accel.device", drop=where))
    elif index is None:
        acc101.report_device(scan, node, match.group(1), string_typed=False)
    else:
        scan.report(node, "ACC102", "index given twice")


RULE = Rule(
    "ACC102",
    "device-string",
    'torch.device("cuda", index)',
    "accel.device(index)",
    portable=True,
    calls={"torch.device": torch_device},
    examples=(('d = torch.device("cuda", rank)', "d = accel.device(rank)"),),
    counterexamples=('d = torch.device("cpu", 0)',),
)
