"""ACC189: cuDNN/CUDA backend flag without a portable equivalent."""

from __future__ import annotations

from ..apis import manual
from .base import Rule

RULE = Rule(
    "ACC189",
    "numerics",
    "cuDNN/CUDA backend flag without a portable equivalent",
    None,
    portable=False,
    apis=(
        manual(
            "torch.backends.cuda.sdp_kernel",
            "torch.nn.attention.sdpa_kernel(...) chooses attention kernels on every device",
        ),
        manual(
            "torch.backends.cuda.enable_flash_sdp",
            "torch.nn.attention.sdpa_kernel(...) chooses attention kernels on every device",
        ),
        manual(
            "torch.backends.cuda.enable_mem_efficient_sdp",
            "torch.nn.attention.sdpa_kernel(...) chooses attention kernels on every device",
        ),
        manual(
            "torch.backends.cuda.enable_math_sdp",
            "torch.nn.attention.sdpa_kernel(...) chooses attention kernels on every device",
        ),
        manual(
            "torch.backends.cuda.enable_cudnn_sdp",
            "torch.nn.attention.sdpa_kernel(...) chooses attention kernels on every device",
        ),
        manual("torch.backends.cudnn", "cuDNN setting with no portable equivalent"),
        manual("torch.backends.cuda", "CUDA backend setting with no portable equivalent"),
    ),
    examples=(("torch.backends.cudnn.enabled = False", None),),
)
