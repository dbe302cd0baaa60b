"""Scanner checks for values: device strings, integer ordinals, process-group backends,
CUDA environment variables and build flags.

Rewrites keep the expression's type: a device string stays a string
(``"cuda"`` -> ``accel.device_type()``, ``f"cuda:{i}"`` -> ``f"{accel.device_type()}:{i}"``,
``"cuda:1"`` -> ``str(accel.device(1))``) wherever the value is stored or compared; only
where a call takes it as a device (``.to(...)``, ``device=``, ``torch.device(...)``) may it
become ``accel.device(...)``.
"""

from __future__ import annotations

import ast
import re
from typing import Literal

from .fixes import Replace
from .guards import CUDA_DEVICE, RANK_NAME, last_name, str_value
from .reporting import Reporter
from .rules import acc171_nccl_backend as acc171
from .rules import acc172_ddp_device_ids as acc172
from .rules.acc103_runtime_device_string import DeviceFrom
from .rules.acc104_integer_device import WrapDevice

_STRING_PREFIX = re.compile(r"^([rRuU]?)(['\"])cuda")
_NVCC_FLAGS = ("-gencode", "--generate-code", "-arch=sm_", "--gpu-architecture")  # accel: ignore[ACC201]
#: Variables read by CUDA and its libraries (cuBLAS, cuDNN, NCCL, ...), by name prefix.
_CUDA_ENV_PREFIXES = ("CUDA_", "NCCL_", "CUDNN_", "CUBLAS_", "CUBLASLT_", "CUFFT_", "CURAND_", "CUSPARSE_", "NVIDIA_", "NVTE_")  # accel: ignore
#: NVIDIA toolkit programs named as a string (``[nvcc, "-V"]`` built from ``os.path.join(CUDA_HOME, "bin", "nvcc")``).
_NVIDIA_TOOL = re.compile(r"^(?:.*/)?(?:nvcc|cuobjdump|nvdisasm|nvprof|nvidia-smi)(?:\.exe)?(?:\s+-.*)?$")  # accel: ignore


class DeviceChecks(Reporter):
    """Mixin of the scanner: checks on values in device, backend and environment positions."""

    #: names holding a CUDA device ordinal in this module (set by :class:`.context.ScanContext`)
    ordinal_names: frozenset[str] = frozenset()

    # ---- device strings
    def device_value(self, node: ast.AST | None, allow_int: bool = False, string_typed: bool = False) -> None:
        """Report ``node`` if it names a CUDA device where a device is expected.

        ``string_typed``: the value is stored or compared as a string (an assignment, a
        default, a dict value), so its rewrite must stay a string.
        """
        if node is None or id(node) in self.done:
            return
        if isinstance(node, ast.IfExp):
            self.device_value(node.body, allow_int, string_typed)
            self.device_value(node.orelse, allow_int, string_typed)
            return
        value = str_value(node)
        if value is not None:
            match = CUDA_DEVICE.match(value)
            if match is None:
                return
            self.done.add(id(node))
            index = match.group(1)
            if string_typed:
                text = "accel.device_type()" if index is None else f"str(accel.device({index}))"
            else:
                text = "accel.device()" if index is None else f"accel.device({index})"
            self.report(node, "ACC101", None, Replace(text=text), suggestion=text)
            return
        if self.runtime_string(node, string_typed):
            return
        if allow_int:
            if isinstance(node, ast.Constant) and type(node.value) is int:
                text = f"accel.device({node.value})"
                self.report(node, "ACC104", None, Replace(text=text), suggestion=text)
            elif isinstance(node, (ast.Name, ast.Attribute)) and (
                RANK_NAME.match(last_name(node) or "") or (isinstance(node, ast.Name) and node.id in self.ordinal_names)
            ):
                self.report(node, "ACC104", None, WrapDevice(), suggestion=f"accel.device({last_name(node)})")

    def runtime_string(self, node: ast.AST, string_typed: bool = True) -> bool:
        """``f"cuda:{i}"``, ``"cuda:{}".format(i)``, ``"cuda:%d" % i``, ``"cuda:" + str(i)``.

        Returns whether ``node`` was one.  In a device position (``string_typed`` false) the
        simple shapes become ``accel.device(i)``; elsewhere the leading ``cuda`` becomes
        ``accel.device_type()`` and the value stays a string.
        """
        if id(node) in self.done:
            return True
        literal: ast.AST | None = None
        simple_kind: Literal["fstring", "concat", "format"] | None = None
        if isinstance(node, ast.JoinedStr):
            head = str_value(node.values[0]) if node.values else None
            if head is None or not head.startswith("cuda:"):
                return False
            values = node.values
            if (
                head == "cuda:"
                and len(values) == 2
                and isinstance(values[1], ast.FormattedValue)
                and values[1].conversion == -1
                and values[1].format_spec is None
            ):
                simple_kind = "fstring"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            left = str_value(node.left)
            if left is None or not (left == "cuda" or left.startswith("cuda:")):
                return False
            literal = node.left
            right = node.right
            if (
                isinstance(node.op, ast.Add)
                and left == "cuda:"
                and isinstance(right, ast.Call)
                and last_name(right.func) == "str"
                and len(right.args) == 1
            ):
                simple_kind = "concat"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            fmt = str_value(node.func.value)
            if fmt is None or not fmt.startswith("cuda:"):
                return False
            literal = node.func.value
            if fmt == "cuda:{}" and len(node.args) == 1 and not node.keywords:
                simple_kind = "format"
        else:
            return False
        self.done.add(id(node))
        if not string_typed and simple_kind is not None:
            self.report(node, "ACC103", None, DeviceFrom(shape=simple_kind))
            return True
        # Keep a string: rewrite only the leading "cuda" of the literal.
        if isinstance(node, ast.JoinedStr):
            segment = self.segment(node) or ""
            match = re.match(r"^([fFrR]{1,2})(['\"]{1,3})cuda", segment)
            if match is None:
                self.report(node, "ACC103", "f-string")
                return True
            text = match.group(0)[:-4] + "{accel.device_type()}" + segment[match.end() :]
            self.report(node, "ACC103", None, Replace(text=text), suggestion="f\"{accel.device_type()}:...\"")
            return True
        assert literal is not None
        segment = self.segment(literal) or ""
        match = _STRING_PREFIX.match(segment)
        if match is None or "\n" in segment:
            self.report(node, "ACC103", "string built at run time")
            return True
        rest = match.group(1) + match.group(2) + segment[match.end() :]
        empty = rest[len(match.group(1)) :] in ('""', "''")
        text = "accel.device_type()" if empty else f"(accel.device_type() + {rest})"
        self.report(node, "ACC103", None, Replace(text=text), fix_node=literal, suggestion="accel.device_type() + ...")
        return True

    # ---- process-group backends
    def backend_value(self, node: ast.AST | None) -> None:
        acc171.backend_value(self, node)  # type: ignore[arg-type]

    def device_ids(self, call: ast.Call, node: ast.AST, qualname: str | None) -> None:
        """``device_ids=[rank]``: DDP's become ``accel.ddp_device_ids(rank)`` (ACC172); elsewhere (``dist.barrier``) they name a CUDA device."""
        if acc172.is_ddp(call, qualname):
            acc172.check_ddp(self, call)  # type: ignore[arg-type]
            return
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if (isinstance(first, ast.Constant) and type(first.value) is int) or RANK_NAME.match(last_name(first) or ""):
                self.report(node, "ACC104", "device_ids name CUDA devices outside DDP; pass them only where accel.device_type() needs them")

    # ---- strings anywhere
    def constant(self, node: ast.Constant) -> None:
        """Strings that are coupling wherever they stand: ``"nccl"``, nvidia-smi, nvcc flags."""
        value = node.value
        if not isinstance(value, str) or id(node) in self.done:
            return
        if value in ("nccl", "NCCL"):
            self.backend_value(node)
        elif value.startswith("nvidia-smi"):  # accel: ignore[ACC206]
            self.report(node, "ACC206", "runs nvidia-smi", suggestion="query accel.device_name() / accel.mem_get_info() instead")
        elif value == "TORCH_CUDA_ARCH_LIST" or value.startswith(_NVCC_FLAGS):  # accel: ignore[ACC201]
            self.report(node, "ACC201", f"CUDA build setting {value.split()[0]!r}", suggestion="CUDA kernels must be built per backend")
        elif _NVIDIA_TOOL.match(value):
            self.report(node, "ACC206", f"runs the NVIDIA tool {value.split()[0]!r}",
                        suggestion="a CUDA toolkit tool; ask accel.backend().name / accel.capabilities() instead")  # fmt: skip

    # ---- environment and extensions
    def env_name(self, node: ast.AST, paren: bool = False) -> None:
        name = str_value(node)
        if name is None or id(node) in self.done:
            return
        self.done.add(id(node))
        if name == "CUDA_VISIBLE_DEVICES":
            # the cpu backend has no such variable (visible_devices_env() raises there): keep the name it had
            quote = (self.segment(node) or '"')[0]
            self.report(node, "ACC192", None, Replace(text="accel.visible_devices_env()", guard="value" if paren else "bare",
                        otherwise=f"{quote}CUDA_VISIBLE_DEVICES{quote}"))  # fmt: skip
        elif name.startswith(_CUDA_ENV_PREFIXES) or "_CUDA_" in name or "_NCCL_" in name or "_CUDNN_" in name:
            self.report(node, "ACC199", name, suggestion="only CUDA reads it; set the selected backend's own variable")

    def cpp_extension(self, node: ast.Call) -> None:
        for kw in node.keywords:
            if kw.arg in ("cuda_sources", "with_cuda", "extra_cuda_cflags"):
                self.report(node, "ACC201", f"{kw.arg}=", suggestion="CUDA kernels must be built per backend")
                return
        for sub in ast.walk(node):
            value = str_value(sub)
            if value is not None and value.endswith((".cu", ".cuh")):
                self.report(node, "ACC201", f"CUDA source {value}", suggestion="CUDA kernels must be built per backend")
                return
