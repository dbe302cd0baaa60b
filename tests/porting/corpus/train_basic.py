# ruff: noqa
"""Single-GPU image classifier: the usual hard-coded CUDA placement."""
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda", help="device to train on (cuda or cpu)")  # expect: ACC101
parser.add_argument("--local_rank", type=int, default=0)
args = parser.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"  # expect: ACC101, ACC121
DEVICE = torch.device("cuda:0")  # expect: ACC101
second = torch.device("cuda", 1)  # expect: ACC102
per_rank = torch.device(f"cuda:{args.local_rank}")  # expect: ACC103
rank_device = "cuda:" + str(args.local_rank)  # expect: ACC103
n_gpus = torch.cuda.device_count()  # expect: ACC122


def build(width=128, device="cuda"):  # expect: ACC101
    model = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Linear(width, 10))
    return model.cuda()  # expect: ACC111


model = build()
model = model.to(args.local_rank)  # expect: ACC104
x = torch.randn(8, 32, device="cuda")  # expect: ACC101
y = torch.randint(0, 10, (8,)).cuda(non_blocking=True)  # expect: ACC111
z = torch.zeros(3).to(0)  # expect: ACC104
w = torch.zeros(3, device=0)  # expect: ACC104
if x.is_cuda:  # expect: ACC112
    print("training on", torch.cuda.get_device_name(0))  # expect: ACC123
state = torch.load("ckpt.pt", map_location="cuda")  # expect: ACC101
config = {"device": "cuda:1", "epochs": 3}  # expect: ACC101
for epoch in range(3):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
