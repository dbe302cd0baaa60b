# ruff: noqa
"""Code that mentions cuda but is not coupled: nothing here may be reported.

Docstrings say "cuda" and torch.cuda.synchronize() freely.
"""
import argparse
import logging

import torch

import accel_abstraction as accel

log = logging.getLogger(__name__)
use_cuda = True  # a variable name, not an API
cuda_count = 0
parser = argparse.ArgumentParser()
parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help='e.g. "cuda" or "cuda:1"')
parser.add_argument("--use-cuda", action="store_true", help="run on cuda")
log.info("moving model to cuda")
print(f"cuda:{cuda_count}")
names = ["cuda", "cpu", "mps"]
# torch.cuda.synchronize() in a comment
model = torch.nn.Linear(4, 4)
x = torch.randn(2, 4)
x = x.to(torch.float16)
x = x.to(model.weight)
x = x.to(dtype=torch.float32)
dev = accel.device()
model = model.to(accel.device())
with torch.autocast(device_type=accel.device_type()):
    pass
with torch.amp.autocast(device_type=x.device.type, enabled=False):
    pass
scaler = torch.amp.GradScaler("cpu")
acc = torch.accelerator.current_accelerator()
if torch.accelerator.is_available():
    torch.accelerator.synchronize()
if accel.device_type() in ("cuda",):
    torch.cuda.empty_cache()
if accel.device_type() != "cuda":
    pass
else:
    torch.cuda.reset_peak_memory_stats()
cpu_dev = torch.device("cpu")
loader_kwargs = {"pin_memory": False}
backend_name = "gloo"
on_accelerator = x.device.type != "cpu"
if x.device.type == "cpu":
    pass
local_rank = 0
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=None)
gpu_flags = {"use_gpu": False}
pin_mem = True
args = parser.parse_args()
if args.use_cuda:
    x = x.pin_memory()
if torch.accelerator.is_available():
    loader = torch.utils.data.DataLoader([], pin_memory=True)
logging.warning("cuda:%d is busy", 0)
log.info(f"cuda:{local_rank} ready")
flops_per_token = 6 * 1024
tflops = flops_per_token * 3 / 1e12
