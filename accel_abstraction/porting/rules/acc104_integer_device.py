"""ACC104: bare integer device means a CUDA device."""

from __future__ import annotations

import ast
from collections.abc import Callable
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
    ),
)
