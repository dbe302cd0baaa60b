"""ACC139: torch.cuda.amp API without a portable equivalent."""

from __future__ import annotations

from ..apis import manual
from .base import Rule

RULE = Rule(
    "ACC139",
    "amp",
    "torch.cuda.amp API without a portable equivalent",
    "torch.amp with device_type=accel.device_type()",
    portable=False,
    apis=(
        manual("torch.cuda.amp.custom_fwd", "torch.amp.custom_fwd(device_type=accel.device_type())"),
        manual("torch.cuda.amp.custom_bwd", "torch.amp.custom_bwd(device_type=accel.device_type())"),
        manual("torch.cuda.amp", "use torch.amp with device_type=accel.device_type()"),
    ),
    examples=(("f = torch.cuda.amp.custom_fwd(g)", None),),
)
