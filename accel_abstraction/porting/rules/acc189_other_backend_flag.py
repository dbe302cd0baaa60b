"""ACC189: cuDNN/CUDA backend flag without a portable equivalent."""

from __future__ import annotations

from ..apis import manual
from .base import Rule

_HINT = "torch.nn.attention.sdpa_kernel(...) chooses attention kernels on every device"

RULE = Rule(
    "ACC189",
    "numerics",
    "cuDNN/CUDA backend flag without a portable equivalent",
    None,
    portable=False,
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
