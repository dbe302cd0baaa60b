"""ACC123: torch.cuda current/set device or device name."""

from __future__ import annotations

from ..apis import RAISES, call, manual
from .base import Rule

RULE = Rule(
    "ACC123",
    "cuda-api",
    "torch.cuda current/set device or device name",
    "accel.current_device() / accel.set_device(i) / accel.device_name()",
    portable=True,
    apis=(
        call("torch.cuda.current_device", "accel.current_device", RAISES),
        call("torch.cuda.set_device", "accel.set_device", RAISES),
        call("torch.cuda.get_device_name", "accel.device_name", RAISES),
        manual("torch.cuda.device", "use accel.set_device(i) (no portable context manager)"),
    ),
    examples=(("torch.cuda.set_device(rank)", "accel.set_device(rank)"),),
)
