"""ACC192: CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

from .base import Rule

RULE = Rule(
    "ACC192",
    "env",
    "CUDA_VISIBLE_DEVICES",
    "accel.visible_devices_env()",
    portable=True,
    examples=(
        (
            'v = os.environ["CUDA_VISIBLE_DEVICES"]',
            'v = os.environ[accel.visible_devices_env() if accel.is_accelerator_available() else "CUDA_VISIBLE_DEVICES"]',
        ),
    ),
)
