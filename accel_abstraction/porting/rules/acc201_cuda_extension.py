"""ACC201: custom CUDA extension."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from ..apis import ApiMapping, manual, package
from ..guards import str_value
from .base import Rule

if TYPE_CHECKING:
    from ..context import ScanContext

_NVCC_FLAGS = ("-gencode", "--generate-code", "-arch=sm_", "--gpu-architecture")  # accel: ignore[ACC201]
_BUILD_HINT = "CUDA kernels must be built per backend"
CPP_EXTENSION_LOAD = ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")

_EXTENSION_HINT = (
    "a compiled CUDA kernel module; use the torch operation it accelerates, or a kernel built for the backend"
)
#: A module named like a compiled CUDA extension (``fused_layer_norm_cuda``, ``xentropy_cuda``).
EXTENSION_MODULE = re.compile(r"^\w+_cuda(?:_\w+)?$")
#: What an import of such a module is reported as (:func:`accel_abstraction.porting.mapping.package_row`).
EXTENSION_MODULE_ROW = ApiMapping("*_cuda", "ACC201", "package", None, _EXTENSION_HINT)

def check_build_string(scan: ScanContext, node: ast.Constant) -> None:
    """``TORCH_CUDA_ARCH_LIST`` or an nvcc flag, wherever it stands."""
    value = str(node.value)  # a str: the traversal hands string literals only
    if value == "TORCH_CUDA_ARCH_LIST" or value.startswith(_NVCC_FLAGS):  # accel: ignore[ACC201]
        scan.report(node, "ACC201", f"CUDA build setting {value.split()[0]!r}", suggestion=_BUILD_HINT)


def check_extension_load(scan: ScanContext, node: ast.Call) -> None:
    """``cpp_extension.load(..., cuda_sources=...)`` or of ``.cu`` files."""
    for kw in node.keywords:
        if kw.arg in ("cuda_sources", "with_cuda", "extra_cuda_cflags"):
            scan.report(node, "ACC201", f"{kw.arg}=", suggestion=_BUILD_HINT)
            return
    for sub in ast.walk(node):
        value = str_value(sub)
        if value is not None and value.endswith((".cu", ".cuh")):
            scan.report(node, "ACC201", f"CUDA source {value}", suggestion=_BUILD_HINT)
            return


RULE = Rule(
    "ACC201",
    "manual",
    "custom CUDA extension",
    "build per backend; no automatic port",
    portable=False,
    visits={"string": check_build_string, **{f"call:{name}": check_extension_load for name in CPP_EXTENSION_LOAD}},
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
