"""ACC113: device-type test: false on any other accelerator, so its branch is skipped."""

from __future__ import annotations

from .base import Rule

RULE = Rule(
    "ACC113",
    "device-string",
    "device-type test: false on any other accelerator, so its branch is skipped",
    '!= "cpu" (an accelerator)',
    portable=True,
    examples=(
        ('if x.device.type == "cuda":\n    pass', 'if x.device.type != "cpu":'),
        (
            "device_type = 'cuda' if 'cuda' in device else 'cpu'",
            "device_type = accel.device_type() if 'cpu' not in device else 'cpu'",
        ),
        ('ok = device.startswith("cuda")', 'ok = not device.startswith("cpu")'),
    ),
    counterexamples=(
        'if accel.device_type() == "cuda":\n    pass',
        'if x.device.type == "cpu":\n    pass',
        'ok = kind == "cuda"',
    ),
)
