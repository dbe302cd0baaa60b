"""ACC132: autocast with device_type "cuda"."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..apis import ACCELERATOR_TEST
from ..fixes import Keep, RenameCall, Replace
from ..guards import arg_of, last_name, str_value
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext

#: torch's autocast, by its qualified names.
AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
_PARTIAL = {"functools.partial"}


def check_autocast(scan: ScanContext, node: ast.Call) -> None:
    """``torch.autocast("cuda", ...)`` -> ``accel.autocast(...)``, disabled on the cpu backend as CUDA autocast was without CUDA."""
    dev, where = arg_of(node, 0, "device_type")
    if str_value(dev) == "cuda":
        assert dev is not None
        scan.done.add(id(dev))
        scan.report(node, "ACC132", None, RenameCall(callee="accel.autocast", drop=where, guard="enabled"))


def autocast_names(scan: ScanContext) -> frozenset[str]:
    """Names assigned ``torch.autocast`` itself (``ac = torch.autocast``), called later as ``ac("cuda")``."""
    if scan.autocast_names is None:
        names: set[str] = set()
        if "autocast" in scan.source:
            for node in ast.walk(scan.tree):  # the assignment's own line need not be hot
                if isinstance(node, ast.Assign):
                    values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
                    if any(scan.aliases.qualname(v) in AUTOCAST for v in values):
                        names.update(n for n in map(last_name, node.targets) if n)
        scan.autocast_names = frozenset(names)
    return scan.autocast_names


def autocast_like(scan: ScanContext, node: ast.Call, q: str | None) -> bool:
    """``autocast = torch.autocast`` called later as ``autocast("cuda")``, or ``partial(torch.autocast, "cuda")``.

    The literal ``"cuda"`` becomes ``accel.device_type()`` and the call gets
    ``enabled=... and accel.is_accelerator_available()`` (disabled on the cpu backend, as
    CUDA autocast was without CUDA).  Returns whether the call was one.
    """
    offset = 0
    partial = q in _PARTIAL or (q is None and last_name(node.func) == "partial")
    if partial and node.args and scan.aliases.qualname(node.args[0]) in AUTOCAST:
        offset = 1
    elif not (  # the scanner asks only for callees that are no row of the API table
        "autocast" in (last_name(node.func) or "").lower() or last_name(node.func) in autocast_names(scan)
    ):
        return False
    dev, _ = arg_of(node, offset, "device_type")
    if str_value(dev) != "cuda" or dev is None or id(dev) in scan.done:
        return False
    scan.done.add(id(dev))
    if offset:
        # partial(torch.autocast, "cuda", ...): the callee is torch.autocast, which takes enabled=
        scan.report(dev, "ACC132", "autocast bound by functools.partial", Replace(text="accel.device_type()"), suggestion="accel.device_type()")
        scan.report(node, "ACC132", "autocast bound by functools.partial: stays disabled on the cpu backend", Keep(guard="enabled"),
                    suggestion=f"enabled=... and {ACCELERATOR_TEST}")  # fmt: skip
    else:
        # a name that may also be nullcontext (`scope = autocast if amp else nullcontext`): only the device
        # type changes, and it stays "cuda" (autocast disabled, as without CUDA) on the cpu backend
        quote = (scan.segment(dev) or '"')[0]
        scan.report(dev, "ACC132", "autocast bound to a name", Replace(text="accel.device_type()", guard="bare",
                    otherwise=f"{quote}cuda{quote}"), suggestion=f"accel.device_type() if {ACCELERATOR_TEST} else 'cuda'")  # fmt: skip
    return True


RULE = Rule(
    "ACC132",
    "amp",
    'autocast with device_type "cuda"',
    "accel.autocast(dtype=..., enabled=...)",
    portable=True,
    calls=dict.fromkeys(AUTOCAST, check_autocast),
    examples=(
        (
            'with torch.autocast("cuda", dtype=torch.bfloat16):\n    pass',
            "with accel.autocast(dtype=torch.bfloat16, enabled=accel.is_accelerator_available()):",
        ),
        (
            'ac = torch.autocast if amp else contextlib.nullcontext\nwith ac("cuda"):\n    pass',
            'with ac(accel.device_type() if accel.is_accelerator_available() else "cuda"):',
        ),
        (
            'ctx = functools.partial(torch.autocast, "cuda")',
            "ctx = functools.partial(torch.autocast, accel.device_type(), enabled=accel.is_accelerator_available())",
        ),
    ),
    counterexamples=(
        "with torch.autocast(device_type=device_type):\n    pass",
        'ac = torch.autocast\nwith ac("cpu"):\n    pass',
    ),
)
