# ruff: noqa
"""Custom kernels and NVIDIA-only libraries: reported, never rewritten."""
import cupy as cp  # expect: ACC203
from apex import amp  # expect: ACC204
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, load

ext = CUDAExtension("fused_adam", ["fused_adam.cpp", "fused_adam_kernel.cu"])  # expect: ACC201
build = BuildExtension
kernels = load(name="kernels", sources=["kernels.cpp", "kernels.cu"])  # expect: ACC201
arr = cp.asarray([1, 2, 3])  # expect: ACC203
model, opt = amp.initialize(None, None, opt_level="O1")  # expect: ACC204
with amp.scale_loss(arr, opt) as scaled:  # expect: ACC204
    pass

import torch

toolkit = torch.version.cuda  # expect: ACC206
fp8 = torch._scaled_mm(arr, arr, scale_a=arr, scale_b=arr)  # expect: ACC207
import subprocess

smi = subprocess.run(["nvidia-smi", "--query-gpu=name"], capture_output=True)  # expect: ACC206
flags = ["-O3", "-gencode=arch=compute_80,code=sm_80"]  # expect: ACC201
os_env_arch = {"TORCH_CUDA_ARCH_LIST": "8.0"}  # expect: ACC201
activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]  # expect: ACC202
