# ruff: noqa
"""Timing and memory reporting around a training step."""
import time

import torch


def timed_step(model, x):
    torch.cuda.synchronize()  # expect: ACC161
    start = torch.cuda.Event(enable_timing=True)  # expect: ACC162
    end = torch.cuda.Event(enable_timing=True)  # expect: ACC162
    start.record()
    side = torch.cuda.Stream()  # expect: ACC162
    with torch.cuda.stream(side):  # expect: ACC162
        out = model(x)
    torch.cuda.current_stream().wait_stream(side)  # expect: ACC162
    end.record()
    torch.cuda.synchronize()  # expect: ACC161
    return out, start.elapsed_time(end)


def memory_report() -> str:
    used = torch.cuda.memory_allocated() / 2**20  # expect: ACC151
    peak = torch.cuda.max_memory_allocated() / 2**20  # expect: ACC151
    reserved = torch.cuda.memory_reserved()  # expect: ACC151
    top = torch.cuda.max_memory_reserved()  # expect: ACC151
    torch.cuda.reset_peak_memory_stats()  # expect: ACC151
    torch.cuda.empty_cache()  # expect: ACC151
    torch.cuda.ipc_collect()  # expect: ACC129
    stats = torch.cuda.memory_stats()  # expect: ACC151
    summary = torch.cuda.memory_summary()  # expect: ACC151
    return f"{used:.1f} MiB used, {peak:.1f} MiB peak"


def annotate(model, x):
    torch.cuda.nvtx.range_push("forward")  # expect: ACC202
    y = model(x)
    torch.cuda.nvtx.range_pop()  # expect: ACC202
    props = torch.cuda.get_device_properties(0)  # expect: ACC125
    major, minor = torch.cuda.get_device_capability()  # expect: ACC125
    return y


def capture(model, static_x):
    g = torch.cuda.CUDAGraph()  # expect: ACC205
    with torch.cuda.graph(g):  # expect: ACC205
        static_y = model(static_x)
    return g, static_y
