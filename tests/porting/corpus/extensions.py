# ruff: noqa
"""Custom kernels and NVIDIA-only libraries: reported, never rewritten."""
import cupy as cp  # expect: ACC203
from apex import amp  # expect: ACC204
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, load

ext = CUDAExtension("fused_adam", ["fused_adam.cpp", "fused_adam_kernel.cu"])  # expect: ACC201
build = BuildExtension
kernels = load(name="kernels", sources=["kernels.cpp", "kernels.cu"])  # expect: ACC201
arr = cp.asarray([1, 2, 3])
model, opt = amp.initialize(None, None, opt_level="O1")

import torch

toolkit = torch.version.cuda  # expect: ACC206
fp8 = torch._scaled_mm(arr, arr, scale_a=arr, scale_b=arr)  # expect: ACC207
