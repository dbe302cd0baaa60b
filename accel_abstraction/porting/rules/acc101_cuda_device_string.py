"""ACC101: hard-coded "cuda" device string."""

from __future__ import annotations

from .base import Rule

RULE = Rule(
    "ACC101",
    "device-string",
    'hard-coded "cuda" device string',
    "accel.device() / accel.device_type()",
    portable=True,
    examples=(
        ('x = torch.zeros(2, device="cuda")', "x = torch.zeros(2, device=accel.device())"),
        ('device = "cuda"', "device = accel.device_type()"),
        ('cfg = {"device": "cuda:1"}', 'cfg = {"device": str(accel.device(1))}'),
        ('x = torch.zeros(2, device=f"cuda")', "x = torch.zeros(2, device=accel.device())"),
        ('d = getattr(model, "device", "cuda")', 'd = getattr(model, "device", accel.device_type())'),
        ('def get_device():\n    return "cuda"', "    return accel.device_type()"),
        ('torch.set_default_device("cuda")', "torch.set_default_device(accel.device())"),
        ('g = torch.Generator("cuda")', "g = torch.Generator(accel.device())"),
        (
            'dl = DataLoader(ds, pin_memory_device="cuda")',
            "dl = DataLoader(ds, pin_memory_device=accel.device_type())",
        ),
    ),
    counterexamples=(
        'names = ["cuda", "cpu"]',
        'print("moving to cuda")',
        'def get_name():\n    return "cuda"',
        'd = getattr(model, "kind", "cuda")',
    ),
)
