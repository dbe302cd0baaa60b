"""ACC201: custom CUDA extension."""

from __future__ import annotations

import re

from ..apis import ApiMapping, manual, package
from .base import Rule

_EXTENSION_HINT = (
    "a compiled CUDA kernel module; use the torch operation it accelerates, or a kernel built for the backend"
)
#: A module named like a compiled CUDA extension (``fused_layer_norm_cuda``, ``xentropy_cuda``).
EXTENSION_MODULE = re.compile(r"^\w+_cuda(?:_\w+)?$")
#: What an import of such a module is reported as (:func:`accel_abstraction.porting.mapping.package_row`).
EXTENSION_MODULE_ROW = ApiMapping("*_cuda", "ACC201", "package", None, _EXTENSION_HINT)

RULE = Rule(
    "ACC201",
    "manual",
    "custom CUDA extension",
    "build per backend; no automatic port",
    portable=False,
    apis=(
        manual("torch.utils.cpp_extension.CUDAExtension", "CUDA kernels must be built per backend"),
        manual("torch.utils.cpp_extension.CUDA_HOME", "the CUDA toolkit path; build kernels per backend"),
        package("pycuda", "PyCUDA kernels are CUDA-only"),
        package("numba.cuda", "numba.cuda kernels are CUDA-only"),
        *(
            package(name, _EXTENSION_HINT)
            for name in ("amp_C", "apex_C", "syncbn", "flash_attn", "flash_attn_2_cuda", "triton")
        ),
    ),
    examples=(
        ('m = torch.utils.cpp_extension.load(name="k", sources=["k.cu"])', None),
        ('flags = ["-gencode=arch=compute_80,code=sm_80"]', None),
        ("import amp_C", None),
        ("from fused_layer_norm_cuda import forward", None),
        ("from torch.utils.cpp_extension import CUDA_HOME", None),
    ),
    counterexamples=(
        "import my_cudalike_utils",
        "from torch.utils.cpp_extension import BuildExtension",
    ),
)
