"""ACC139: CUDA amp API (torch.cuda.amp, CUDA's autocast dtype) without a portable equivalent."""

from __future__ import annotations

from ..apis import manual
from .base import Rule

RULE = Rule(
    "ACC139",
    "amp",
    "CUDA amp API without a portable equivalent",
    "torch.amp with device_type=accel.device_type()",
    portable=False,
    apis=(
        manual("torch.cuda.amp.custom_fwd", "torch.amp.custom_fwd(device_type=accel.device_type())"),
        manual("torch.cuda.amp.custom_bwd", "torch.amp.custom_bwd(device_type=accel.device_type())"),
        manual("torch.cuda.amp", "use torch.amp with device_type=accel.device_type()"),
        # CUDA's autocast dtype under a device-neutral name (mmengine's autocast wrapper)
        manual("torch.get_autocast_gpu_dtype", "CUDA's autocast dtype: torch.get_autocast_dtype(accel.device_type())"),
        manual("torch.set_autocast_gpu_dtype", "sets CUDA's autocast dtype: torch.set_autocast_dtype(accel.device_type(), dtype)"),
    ),
    examples=(
        ("f = torch.cuda.amp.custom_fwd(g)", None),
        ("dtype = torch.get_autocast_gpu_dtype()", None),
    ),
    counterexamples=("dtype = torch.get_autocast_dtype(accel.device_type())",),
)
