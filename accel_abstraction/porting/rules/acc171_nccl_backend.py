"""ACC171: "nccl" process-group backend."""

from __future__ import annotations

from .base import Rule

RULE = Rule(
    "ACC171",
    "distributed",
    '"nccl" process-group backend',
    "accel.dist_backend()",
    portable=True,
    examples=(
        (
            'torch.distributed.init_process_group("nccl")',
            "torch.distributed.init_process_group(accel.dist_backend())",
        ),
        (
            'p.add_argument("--dist-backend", default="nccl")',
            'p.add_argument("--dist-backend", default=accel.dist_backend())',
        ),
        (
            'ok = args.dist_backend == "nccl"',
            'ok = args.dist_backend == (accel.dist_backend() if accel.is_accelerator_available() else "nccl")',
        ),
        (
            'if dist.get_backend() == "nccl":\n    pass',
            'if dist.get_backend() == (accel.dist_backend() if accel.is_accelerator_available() else "nccl"):',
        ),
        (
            'torch.distributed.init_process_group(backend="NCCL")',
            "torch.distributed.init_process_group(backend=accel.dist_backend())",
        ),
        ("b = torch.distributed.Backend.NCCL", "b = accel.dist_backend()"),
    ),
    counterexamples=(
        'print("nccl backend needs GPUs")',
        'ok = "nccl" in value',
        'ok = name == "nccl"',
        'from deepspeed.accelerator import get_accelerator\nok = get_accelerator().communication_backend_name() == "nccl"',
    ),
)
