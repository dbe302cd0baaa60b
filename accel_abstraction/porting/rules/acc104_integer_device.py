"""ACC104: bare integer device means a CUDA device."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..cli_options import device_option
from ..fixes import Fix, Replace, expression
from ..guards import RANK_NAME, has_keyword, last_name, str_value
from .acc172_ddp_device_ids import is_ddp
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

#: Calls whose value is a CUDA device ordinal (``torch.cuda.current_device()``), or is one after
#: ``% ...`` (``rank % torch.cuda.device_count()``).
_ORDINAL_CALLS = ("torch.cuda.current_device", "torch.cuda.device_count")


def _ordinal_value(value: ast.AST, qualname: Callable[[ast.AST], str | None]) -> bool:
    """``rank % torch.cuda.device_count()`` or ``torch.cuda.current_device()``."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod):
        value, wanted = value.right, _ORDINAL_CALLS[1]
    else:
        wanted = _ORDINAL_CALLS[0]
    return isinstance(value, ast.Call) and qualname(value.func) == wanted


def ordinal_names(tree: ast.AST, qualname: Callable[[ast.AST], str | None]) -> frozenset[str]:
    """Names that hold a CUDA device ordinal everywhere in the module, so ``x.to(name)`` means ``cuda:name``.

    ``device = rank % torch.cuda.device_count()`` (DiT/SiT-style samplers), ``dev =
    torch.cuda.current_device()``.  Names are module-wide, so only a name that every binding
    gives such a value counts: one that is also a parameter, a loop or ``with`` target or
    assigned anything else (``device = torch.device(...)`` in another function) does not.
    """
    ordinal: set[str] = set()
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            single = len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            if single and _ordinal_value(node.value, qualname):
                ordinal.add(node.targets[0].id)  # type: ignore[attr-defined]
                continue
            other.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)):
            other.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            other.update(n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name))
        elif isinstance(node, ast.arg):
            other.add(node.arg)
    return frozenset(ordinal - other)


#: Parameters whose integer default is a device ordinal (``gpu=0``, ``device=0``; not ``rank=0``).
_DEVICE_PARAM = re.compile(r"^(gpu|gpu_id|gpu_idx|gpu_index|device|device_id|device_idx|device_index|dev_id|cuda_device)$", re.IGNORECASE)


def integer_device(scan: ScanContext, node: ast.AST) -> None:
    """In a position that takes an integer device (``.to(0)``, ``device=local_rank``): the ordinal of a CUDA device."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        text = f"accel.device({node.value})"
        scan.report(node, "ACC104", None, Replace(text=text), suggestion=text)
    elif isinstance(node, (ast.Name, ast.Attribute)) and (
        RANK_NAME.match(last_name(node) or "") or (isinstance(node, ast.Name) and node.id in scan.ordinal_names)
    ):
        scan.report(node, "ACC104", None, WrapDevice(), suggestion=f"accel.device({last_name(node)})")


def ordinal_device_call(scan: ScanContext, node: ast.Call, inner: str) -> None:
    """``torch.device(0)`` / ``torch.device(local_rank)``: a CUDA device; ``inner`` is the argument's text."""
    scan.report(node, "ACC104", None, Replace(text=f"accel.device({inner})"), suggestion=f"accel.device({inner})")


def check_default(scan: ScanContext, name: str, default: ast.AST) -> bool:
    """``def f(gpu=0)``: the ordinal of a CUDA device (a ``rank=0`` default is a process, not a device)."""
    if isinstance(default, ast.Constant) and type(default.value) is int and _DEVICE_PARAM.match(name):
        scan.report(default, "ACC104", f"{name}={default.value} is a CUDA device ordinal",
                    suggestion=f"keep the ordinal and pass it as accel.device({name}) where a device goes")  # fmt: skip
        return True
    return False


def check_device_ids(scan: ScanContext, call: ast.Call, keyword: ast.keyword, qualname: str | None) -> None:
    """``dist.barrier(device_ids=[local_rank])``: ids of CUDA devices outside DDP (DDP's are ACC172's);
    an ``output_device=`` beside ``device_ids=`` is not looked at."""
    if is_ddp(call, qualname) or (keyword.arg == "output_device" and has_keyword(call, "device_ids")):
        return
    value = keyword.value
    if isinstance(value, (ast.List, ast.Tuple)) and value.elts:
        first = value.elts[0]
        if (isinstance(first, ast.Constant) and type(first.value) is int) or RANK_NAME.match(last_name(first) or ""):
            scan.report(value, "ACC104", "device_ids name CUDA devices outside DDP; pass them only where accel.device_type() needs them")


def check_cli_option(scan: ScanContext, node: ast.Call, qualname: str | None) -> bool:
    """``add_argument("--device", type=int, default=0)``, ``@click.option(...)`` alike (:func:`cli_option`)."""
    if isinstance(node.func, ast.Attribute) and node.func.attr == "option" and last_name(node.func.value) != "click":
        return False
    cli_option(scan, node, [str_value(a) or "" for a in node.args])
    return False


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
    visits={
        "default": check_default,
        "keyword:device_ids": check_device_ids,
        "keyword:output_device": check_device_ids,
        "method:add_argument": check_cli_option,
        "method:option": check_cli_option,
    },
    examples=(
        ("y = x.to(local_rank)", "y = x.to(accel.device(local_rank))"),
        ("d = torch.device(0)", "d = accel.device(0)"),
        ("torch.distributed.barrier(device_ids=[local_rank])", None),
        ('p.add_argument("--device", type=int, default=0)', None),
        ("def train(model, gpu=0):\n    pass", None),
        (
            "device = rank % torch.cuda.device_count()\nz = torch.randn(4, device=device)",
            "z = torch.randn(4, device=accel.device(device))",
        ),
    ),
    counterexamples=(
        # the same name is a parameter elsewhere (a torch.device there): names are module-wide, so it is left alone
        "def f(x, device):\n    return x.to(device)\ndevice = rank % torch.cuda.device_count()\ny = x.to(device)",
        "def train(model, rank=0, world_size=1):\n    pass",
        "def train(model, device=None):\n    pass",
        "m = DDP(model, device_ids=[local_rank])",
        "y = x.to(torch.float16)",
        'p.add_argument("--epochs", type=int, default=0)',
        # a size per device, a number of devices: not a device (nanochat's base_train.py)
        'p.add_argument("--device-batch-size", type=int, default=32)',
        'p.add_argument("--num-gpus", type=int, default=1)',
    ),
)
