"""ACC206: CUDA toolkit or NVIDIA driver query."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from ..apis import manual, package
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext

#: NVIDIA toolkit programs named as a string (``[nvcc, "-V"]`` built from ``os.path.join(CUDA_HOME, "bin", "nvcc")``).
_NVIDIA_TOOL = re.compile(r"^(?:.*/)?(?:nvcc|cuobjdump|nvdisasm|nvprof|nvidia-smi)(?:\.exe)?(?:\s+-.*)?$")  # accel: ignore


def check_tool_string(scan: ScanContext, node: ast.Constant) -> None:
    """``"nvidia-smi ..."`` or an NVIDIA tool's path, wherever it stands."""
    value = str(node.value)  # a str: the traversal hands string literals only
    if value.startswith("nvidia-smi"):  # accel: ignore[ACC206]
        scan.report(node, "ACC206", "runs nvidia-smi", suggestion="query accel.device_name() / accel.mem_get_info() instead")
    elif _NVIDIA_TOOL.match(value):
        scan.report(node, "ACC206", f"runs the NVIDIA tool {value.split()[0]!r}",
                    suggestion="a CUDA toolkit tool; ask accel.backend().name / accel.capabilities() instead")  # fmt: skip

_HINT = "an NVIDIA/CUDA environment query; report accel.backend().name and accel.device_name() instead"

RULE = Rule(
    "ACC206",
    "manual",
    "CUDA toolkit or NVIDIA driver query",
    "ask accel.backend() / accel.capabilities()",
    portable=False,
    visits={"string": check_tool_string},
    apis=(
        manual(
            "torch.version.cuda", "a CUDA toolkit version; ask accel.backend().name / accel.capabilities()"
        ),
        *(
            manual(f"torch.utils.collect_env.{name}", _HINT)
            for name in (
                "get_nvidia_driver_version",
                "get_gpu_info",
                "get_running_cuda_version",
                "get_cudnn_version",
                "get_nvidia_smi",
                "get_cuda_module_loading_config",
                "get_cachingallocator_config",
            )
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
