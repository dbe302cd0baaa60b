"""The CUDA backend: NVIDIA GPUs through ``torch.cuda``, cuDNN knobs, NCCL, ``CUDA_VISIBLE_DEVICES``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import torch

from accel_abstraction.features import Availability, Capabilities
from accel_abstraction.interface import Backend, DeviceLike

__all__ = ["CudaBackend", "cuda_availability"]


def cuda_availability() -> Availability:
    """Whether CUDA can run here, and if not, why in words a user can act on."""
    if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        return Availability.no(
            f"this torch build ({torch.__version__}) was compiled without CUDA support",
            hint="install a CUDA build of torch (see https://pytorch.org/get-started/locally/), "
            "or select another backend with ACCEL_BACKEND",
        )
    if not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        detail = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        return Availability.no(
            f"torch {torch.__version__} has CUDA {torch.version.cuda} but sees no usable GPU{detail}",
            hint="check `nvidia-smi`, the driver version and CUDA_VISIBLE_DEVICES",
        )
    return Availability.yes()


class CudaBackend(Backend):
    """Runs on ``torch.device("cuda")``.

    Everything maps onto ``torch.cuda``; the numerics knobs set cuDNN and TF32 flags. The
    default AMP dtype is bfloat16 where the device supports it, float16 otherwise (then
    ``GradScaler()`` is enabled).
    """

    name = "cuda"
    device_type = "cuda"
    dist_backend_name = "nccl"
    visible_devices_var = "CUDA_VISIBLE_DEVICES"

    def availability(self) -> Availability:
        return cuda_availability()

    def capabilities(self) -> Capabilities:
        major = torch.cuda.get_device_capability()[0] if torch.cuda.is_available() else 0
        return Capabilities(
            streams=True,
            events=True,
            memory_stats=True,
            fp16=True,
            bf16=self.is_bf16_supported(),
            fp8=major >= 9,
            graphs=True,
            pinned_memory=True,
            deterministic=True,
            benchmark=True,
            tf32=major >= 8,
            distributed=torch.distributed.is_available(),
            visible_devices=True,
            compile_backend="inductor",
        )

    def hot_bindings(self) -> Mapping[str, Callable[..., Any]]:
        # torch.cuda's argument-less calls mean what the methods mean: bound as they are. Those
        # taking a device get accel's device check first (torch's own differs: "invalid device
        # ordinal" instead of DeviceIndexError), in a closure cheaper than the generic method.
        cuda = torch.cuda
        index_of = self.index_of

        def synchronize(device: DeviceLike = None) -> None:
            cuda.synchronize(None if device is None else index_of(device))

        def memory_allocated(device: DeviceLike = None) -> int:
            return int(cuda.memory_allocated(None if device is None else index_of(device)))

        def max_memory_allocated(device: DeviceLike = None) -> int:
            return int(cuda.max_memory_allocated(None if device is None else index_of(device)))

        return {
            "synchronize": synchronize,
            "device_count": cuda.device_count,
            "current_device": cuda.current_device,
            "memory_allocated": memory_allocated,
            "max_memory_allocated": max_memory_allocated,
        }

    def is_bf16_supported(self) -> bool:
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())

    def supported_dtypes(self) -> list[torch.dtype]:
        dtypes = [torch.float32, torch.float16]
        if self.is_bf16_supported():
            dtypes.append(torch.bfloat16)
        return dtypes

    def manual_seed(self, seed: int) -> None:
        torch.default_generator.manual_seed(seed)
        torch.cuda.manual_seed(seed)

    def set_deterministic(self, flag: bool, warn_only: bool = False) -> None:
        if flag:
            # cuBLAS needs a workspace setting for deterministic matmuls (CUDA >= 10.2).
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(flag, warn_only=warn_only)
        torch.backends.cudnn.deterministic = flag
        if flag:
            torch.backends.cudnn.benchmark = False

    def set_benchmark(self, flag: bool) -> None:
        torch.backends.cudnn.benchmark = flag

    def set_allow_tf32(self, flag: bool) -> None:
        torch.backends.cuda.matmul.allow_tf32 = flag
        torch.backends.cudnn.allow_tf32 = flag

    def dist_device_id(self, local_rank: int) -> torch.device | None:
        return torch.device("cuda", local_rank) if local_rank < self.device_count() else None

    def device_name(self, device: DeviceLike = None) -> str:
        return str(torch.cuda.get_device_name(self.index_of(device)))

    def env_info(self) -> list[tuple[str, str]]:
        rows = [("torch", torch.__version__), ("CUDA runtime", str(torch.version.cuda))]
        if torch.cuda.is_available():
            rows.append(("cuDNN", str(torch.backends.cudnn.version())))
            for i in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(i)
                rows.append((f"cuda:{i}", f"{props.name}, {props.total_memory / 2**30:.1f} GiB, sm_{props.major}{props.minor}"))
        return rows
