"""ACC101: hard-coded "cuda" device string."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..fixes import Replace
from ..guards import CUDA_DEVICE
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext


def device_string(scan: ScanContext, node: ast.AST, value: str, string_typed: bool) -> None:
    """``"cuda"`` / ``"cuda:1"`` in a device position: ``accel.device(...)`` where a call takes it as a
    device, ``accel.device_type()`` / ``str(accel.device(1))`` where it is stored or compared as a string."""
    match = CUDA_DEVICE.match(value)
    if match is None:
        return
    scan.done.add(id(node))
    report_device(scan, node, match.group(1), string_typed)


def report_device(scan: ScanContext, node: ast.AST, index: str | None, string_typed: bool) -> None:
    """Report ``node``, a CUDA device (``index``: its ordinal's text, or none), with its rewrite."""
    if string_typed:
        text = "accel.device_type()" if index is None else f"str(accel.device({index}))"
    else:
        text = "accel.device()" if index is None else f"accel.device({index})"
    scan.report(node, "ACC101", None, Replace(text=text), suggestion=text)

RULE = Rule(
    "ACC101",
    "device-string",
    'hard-coded "cuda" device string',
    "accel.device() / accel.device_type()",
    portable=True,
    examples=(
        ('x = torch.zeros(2, device="cuda")', "x = torch.zeros(2, device=accel.device())"),
        ('device = "cuda"', "device = accel.device_type()"),
        ('cfg = {"device": "cuda:1"}', 'cfg = {"device": str(accel.device(1))}'),
        ('x = torch.zeros(2, device=f"cuda")', "x = torch.zeros(2, device=accel.device())"),
        ('d = getattr(model, "device", "cuda")', 'd = getattr(model, "device", accel.device_type())'),
        ('def get_device():\n    return "cuda"', "    return accel.device_type()"),
        ('torch.set_default_device("cuda")', "torch.set_default_device(accel.device())"),
        ('g = torch.Generator("cuda")', "g = torch.Generator(accel.device())"),
        (
            'dl = DataLoader(ds, pin_memory_device="cuda")',
            "dl = DataLoader(ds, pin_memory_device=accel.device_type())",
        ),
    ),
    counterexamples=(
        'names = ["cuda", "cpu"]',
        'print("moving to cuda")',
        'def get_name():\n    return "cuda"',
        'd = getattr(model, "kind", "cuda")',
    ),
)
