# ruff: noqa
"""Device-type tests, what they guard, and values chosen because the device is CUDA."""
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

device = "cuda"  # expect: ACC101
device_type = "cuda" if "cuda" in device else "cpu"  # expect: ACC101, ACC113
model = torch.nn.Linear(4, 4)
x = torch.randn(2, 4)
if x.device.type == "cuda":  # expect: ACC113
    torch.cuda.synchronize()  # expect: ACC161
    torch.backends.cudnn.benchmark = True  # expect: ACC182
    x = x.pin_memory()  # inside an accelerator guard: not reported
elif x.device.type == "xpu":
    torch.xpu.synchronize()
is_gpu = x.device.type == "cuda"  # expect: ACC113
if x.device.type != "cuda":  # expect: ACC113
    pass
else:
    torch.cuda.reset_peak_memory_stats()  # expect: ACC151
if device.startswith("cuda:"):  # expect: ACC113
    model.cuda()  # expect: ACC111
if x.device.type in ("cuda", "xpu"):  # expect: ACC113
    pass
use_fused = device_type == "cuda"  # expect: ACC207
opt = torch.optim.AdamW(model.parameters(), fused=True)  # expect: ACC207
extra = dict(fused=True) if use_fused else dict()  # expect: ACC207
flops_promised = 312e12  # expect: ACC208
gpu_peak_flops = lookup_peak(torch.cuda.get_device_name())  # expect: ACC208, ACC123
arg = "cuda:0"  # expect: ACC101
dev = torch.device(arg)
rank_device = f"cuda:{dev.index}"  # expect: ACC103
label = "cuda:%d" % 0  # expect: ACC103
x = x.to(torch.device(0))  # expect: ACC104
torch.backends.cuda.matmul.allow_tf32 = True  # expect: ACC183
torch.backends.cudnn.allow_tf32 = True  # expect: ACC183
dist_table = {"cuda": "nccl", "cpu": "gloo"}  # expect: ACC171
