"""ACC206: CUDA toolkit or NVIDIA driver query."""

from __future__ import annotations

from ..apis import manual, package
from .base import Rule

RULE = Rule(
    "ACC206",
    "manual",
    "CUDA toolkit or NVIDIA driver query",
    "ask accel.backend() / accel.capabilities()",
    portable=False,
    apis=(
        manual(
            "torch.version.cuda", "a CUDA toolkit version; ask accel.backend().name / accel.capabilities()"
        ),
        manual(
            "torch.utils.collect_env.get_nvidia_driver_version",
            "an NVIDIA/CUDA environment query; report accel.backend().name and accel.device_name() instead",
        ),
        manual(
            "torch.utils.collect_env.get_gpu_info",
            "an NVIDIA/CUDA environment query; report accel.backend().name and accel.device_name() instead",
        ),
        manual(
            "torch.utils.collect_env.get_running_cuda_version",
            "an NVIDIA/CUDA environment query; report accel.backend().name and accel.device_name() instead",
        ),
        manual(
            "torch.utils.collect_env.get_cudnn_version",
            "an NVIDIA/CUDA environment query; report accel.backend().name and accel.device_name() instead",
        ),
        manual(
            "torch.utils.collect_env.get_nvidia_smi",
            "an NVIDIA/CUDA environment query; report accel.backend().name and accel.device_name() instead",
        ),
        manual(
            "torch.utils.collect_env.get_cuda_module_loading_config",
            "an NVIDIA/CUDA environment query; report accel.backend().name and accel.device_name() instead",
        ),
        manual(
            "torch.utils.collect_env.get_cachingallocator_config",
            "an NVIDIA/CUDA environment query; report accel.backend().name and accel.device_name() instead",
        ),
        package("pynvml", "NVML queries NVIDIA GPUs only; use accel.device_name() / accel.mem_get_info()"),
    ),
    examples=(
        ("v = torch.version.cuda", None),
        ('out = subprocess.run(["nvidia-smi"])', None),
        ('nvcc = os.path.join(home, "bin", "nvcc")', None),
        ("from torch.utils.collect_env import get_nvidia_driver_version", None),
    ),
    counterexamples=(
        "from torch.utils.collect_env import get_pretty_env_info",
        'print("install nvcc first")',
        'row = ("nvcc version", version)',
    ),
)
