"""ACC132: autocast with device_type "cuda"."""

from __future__ import annotations

from .base import Rule

RULE = Rule(
    "ACC132",
    "amp",
    'autocast with device_type "cuda"',
    "accel.autocast(dtype=..., enabled=...)",
    portable=True,
    examples=(
        (
            'with torch.autocast("cuda", dtype=torch.bfloat16):\n    pass',
            "with accel.autocast(dtype=torch.bfloat16, enabled=accel.is_accelerator_available()):",
        ),
        (
            'ac = torch.autocast if amp else contextlib.nullcontext\nwith ac("cuda"):\n    pass',
            'with ac(accel.device_type() if accel.is_accelerator_available() else "cuda"):',
        ),
        (
            'ctx = functools.partial(torch.autocast, "cuda")',
            "ctx = functools.partial(torch.autocast, accel.device_type(), enabled=accel.is_accelerator_available())",
        ),
    ),
    counterexamples=(
        "with torch.autocast(device_type=device_type):\n    pass",
        'ac = torch.autocast\nwith ac("cpu"):\n    pass',
    ),
)
