# ruff: noqa
"""The same calls reached through import aliases."""
import torch
import torch.cuda as tc
import torch.distributed as dist
from os import environ
from torch import cuda
from torch.backends import cudnn
from torch.cuda import amp
from torch.cuda import synchronize as sync  # expect: ACC161

if tc.is_available():  # expect: ACC121
    tc.manual_seed_all(0)  # expect: ACC141
cuda.synchronize()  # expect: ACC161
sync()  # expect: ACC161
scaler = amp.GradScaler()  # expect: ACC133
cudnn.benchmark = True  # expect: ACC182
count = cuda.device_count()  # expect: ACC122
environ["CUDA_VISIBLE_DEVICES"] = "1"  # expect: ACC192
dist.init_process_group(backend="nccl")  # expect: ACC171
check = tc.is_available  # expect: ACC121
