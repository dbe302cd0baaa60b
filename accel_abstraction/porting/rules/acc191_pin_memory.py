"""ACC191: pin_memory=True assumes CUDA."""

from __future__ import annotations

from .base import Rule

RULE = Rule(
    "ACC191",
    "data",
    "pin_memory=True assumes CUDA",
    "pin_memory=accel.capabilities().pinned_memory",
    portable=True,
    examples=(
        (
            "dl = DataLoader(ds, pin_memory=True)",
            "dl = DataLoader(ds, pin_memory=accel.capabilities().pinned_memory)",
        ),
        ("y = x.pin_memory()", None),
    ),
    counterexamples=(
        "if use_cuda:\n    y = x.pin_memory()",
        "dl = DataLoader(ds, pin_memory=args.pin_mem)",
    ),
)
