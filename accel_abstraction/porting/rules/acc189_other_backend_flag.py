"""ACC189: cuDNN/CUDA backend flag without a portable equivalent."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..apis import manual
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext

_HINT = "torch.nn.attention.sdpa_kernel(...) chooses attention kernels on every device"

def check_other_flag(scan: ScanContext, target: ast.AST, qualname: str) -> bool:
    """An assignment to a cuDNN/CUDA backend attribute no ``flag`` row holds."""
    if not qualname.startswith(("torch.backends.cudnn.", "torch.backends.cuda.")):
        return False
    from ..mapping import lookup

    row = lookup(qualname)
    scan.report(target, "ACC189", qualname, suggestion=row.hint if row else None)
    return True


RULE = Rule(
    "ACC189",
    "numerics",
    "cuDNN/CUDA backend flag without a portable equivalent",
    None,
    portable=False,
    visits={"flag": check_other_flag},
    apis=(
        *(
            manual(f"torch.backends.cuda.{name}", _HINT)
            for name in (
                "sdp_kernel",
                "enable_flash_sdp",
                "enable_mem_efficient_sdp",
                "enable_math_sdp",
                "enable_cudnn_sdp",
            )
        ),
        manual("torch.backends.cudnn", "cuDNN setting with no portable equivalent"),
        manual("torch.backends.cuda", "CUDA backend setting with no portable equivalent"),
    ),
    examples=(("torch.backends.cudnn.enabled = False", None),),
)
