"""The training script the launch tests start under torchrun, srun-like variables or by hand.

``python worker.py MODE OUT_DIR``; each rank writes ``OUT_DIR/rank<R>.json`` (and ``.pt``).
Modes:

* ``train``: collectives on ``info.device`` plus DDP training of two small models, with a
  single-process full-batch reference computed on rank 0 (``ref.pt``);
* ``info``: init, one all_reduce, barrier, destroy;
* ``die``: rank 1 exits right after joining; rank 0 then calls ``accel.barrier()`` and
  records the error and how long it took; ``stall``: the same, but rank 1 stays alive
  without taking part (for three timeouts) before it exits.

It uses only the public API a user script would use: ``accel.init_distributed()``,
``info.device``, ``torch.distributed`` and DDP.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import accel_abstraction as accel

STEPS = 3
GLOBAL_BATCH = 8


def _info_dict(info: accel.DistInfo) -> dict[str, object]:
    return {
        "rank": info.rank,
        "world_size": info.world_size,
        "local_rank": info.local_rank,
        "local_world_size": info.local_world_size,
        "node_rank": info.node_rank,
        "device": str(info.device),
        "backend": info.backend,
        "is_main_process": info.is_main_process,
        "launcher": info.launcher,
        "accel_is_main_process": accel.is_main_process(),
    }


def _collectives(device: torch.device, rank: int, world: int) -> dict[str, object]:
    out: dict[str, object] = {}
    t = torch.full((3,), float(rank + 1), device=device)
    dist.all_reduce(t)
    out["all_reduce"] = t.cpu().tolist()
    out["tensor_device_type"] = t.device.type
    t = torch.tensor([float(rank + 10)], device=device)
    dist.broadcast(t, src=world - 1)
    out["broadcast"] = t.cpu().tolist()
    parts = [torch.zeros(2, device=device) for _ in range(world)]
    dist.all_gather(parts, torch.tensor([float(rank), float(2 * rank)], device=device))
    out["all_gather"] = [p.cpu().tolist() for p in parts]
    flat = torch.zeros(world, device=device)
    dist.all_gather_single(flat, torch.tensor([float(rank)], device=device))
    out["all_gather_into_tensor"] = flat.cpu().tolist()
    piece = torch.zeros(1, device=device)
    dist.reduce_scatter_single(piece, torch.arange(world, dtype=torch.float32, device=device) + rank)
    out["reduce_scatter_tensor"] = piece.cpu().tolist()
    piece = torch.zeros(1, device=device)
    dist.reduce_scatter(piece, [torch.tensor([float(i + rank)], device=device) for i in range(world)])
    out["reduce_scatter"] = piece.cpu().tolist()
    t = torch.tensor([float(rank + 1)], device=device)
    dist.reduce(t, dst=0)
    out["reduce_on_0"] = t.cpu().tolist() if rank == 0 else None
    parts = [torch.zeros(1, device=device) for _ in range(world)] if rank == 0 else None
    dist.gather(torch.tensor([float(3 * rank)], device=device), parts, dst=0)
    out["gather_on_0"] = [p.cpu().tolist() for p in parts] if parts else None
    piece = torch.zeros(1, device=device)
    chunks = [torch.tensor([float(7 + i)], device=device) for i in range(world)] if rank == 0 else None
    dist.scatter(piece, chunks, src=0)
    out["scatter"] = piece.cpu().tolist()
    mixed = torch.zeros(world, device=device)
    dist.all_to_all_single(mixed, torch.tensor([float(10 * rank + i) for i in range(world)], device=device))
    out["all_to_all_single"] = mixed.cpu().tolist()
    if rank == 0:
        dist.send(torch.tensor([42.0], device=device), dst=world - 1)
    if rank == world - 1:
        got = torch.zeros(1, device=device)
        dist.recv(got, src=0)
        out["recv"] = got.cpu().tolist()
    strided = torch.arange(6.0, device=device).reshape(2, 3).t()  # not contiguous
    dist.all_reduce(strided, async_op=True).wait()
    out["all_reduce_strided"] = strided.cpu().tolist()
    t = torch.full((2,), float(rank + 1), device=device)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    out["all_reduce_avg"] = t.cpu().tolist()
    piece = torch.zeros(1, device=device)
    dist.reduce_scatter_single(piece, torch.arange(world, dtype=torch.float32, device=device) + rank,
                                op=dist.ReduceOp.AVG)
    out["reduce_scatter_tensor_avg"] = piece.cpu().tolist()
    outs = [torch.zeros(1, device=device) for _ in range(world)]
    dist.all_to_all(outs, [torch.tensor([float(10 * rank + i)], device=device) for i in range(world)])
    out["all_to_all"] = [o.cpu().tolist() for o in outs]
    a, b = torch.full((2,), float(rank), device=device), torch.full((3,), float(2 * rank), device=device)
    with dist._coalescing_manager(async_ops=True) as cm:  # what FSDP1 and DTensor use to batch collectives
        dist.all_reduce(a)
        dist.all_reduce(b)
    cm.wait()
    out["all_reduce_coalesced"] = [a.cpu().tolist(), b.cpu().tolist()]
    dist.barrier(device_ids=[0])
    t = torch.full((2,), float(rank + 1), device=device)
    work = dist.all_reduce(t, async_op=True)
    doubled = work.get_future().then(lambda fut: fut.value()[0] * 2).wait()
    out["async_future"] = [work.wait(), doubled.cpu().tolist(), t.cpu().tolist()]
    big = torch.arange(8.0, device=device)
    dist.all_reduce(big[2:5])  # a contiguous view at an offset: the result lands there, nowhere else
    out["all_reduce_view"] = big.cpu().tolist()
    objs: list[object] = [None] * world
    dist.all_gather_object(objs, {"rank": rank})
    out["all_gather_object"] = objs
    return out


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def _exact_linear() -> torch.nn.Module:
    """float64, weights on a 1/4 grid, so with integer data every product and sum is exact."""
    model = torch.nn.Linear(4, 1).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.25, -0.5, 0.75, 1.0]], dtype=torch.float64))
        model.bias.fill_(-0.25)
    return model


def _data(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    if kind == "mlp":
        return torch.randn(GLOBAL_BATCH, 6, generator=g), torch.randn(GLOBAL_BATCH, 1, generator=g)
    x = torch.randint(-2, 3, (GLOBAL_BATCH, 4), generator=g).double()
    y = torch.randint(-3, 4, (GLOBAL_BATCH, 1), generator=g).double()
    return x, y


def _train(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float) -> None:
    """Mean squared error over the rows given; SGD. Under DDP, the gradient average over
    ranks of per-rank means over equal shards equals the full-batch mean."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(STEPS):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).sum() / x.shape[0]
        loss.backward()
        opt.step()


def _state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    inner = model.module if isinstance(model, DDP) else model
    return {k: v.detach().cpu().clone() for k, v in inner.state_dict().items()}


def train(out_dir: Path) -> None:
    info = accel.init_distributed()
    rank, world, device = info.rank, info.world_size, info.device
    result = {"info": _info_dict(info), "collectives": _collectives(device, rank, world)}
    accel.barrier()
    shard = slice(rank * GLOBAL_BATCH // world, (rank + 1) * GLOBAL_BATCH // world)
    states = {}
    for kind, build, lr in (("mlp", _mlp, 0.1), ("exact", _exact_linear, 2.0**-6)):
        x, y = _data(kind)
        ddp = DDP(build().to(device))
        _train(ddp, x[shard].to(device), y[shard].to(device), lr)
        states[kind] = _state(ddp)
        if rank == 0:  # the single-process run: same start, full batch, no DDP
            ref = build().to(device)
            _train(ref, x.to(device), y.to(device), lr)
            states[f"ref_{kind}"] = _state(ref)
    result["param_device_type"] = next(ddp.parameters()).device.type
    torch.save(states, out_dir / f"rank{rank}.pt")
    (out_dir / f"rank{rank}.json").write_text(json.dumps(result))
    accel.destroy_distributed()


def info_mode(out_dir: Path) -> None:
    info = accel.init_distributed()
    assert accel.init_distributed() is info  # idempotent
    t = torch.tensor([float(info.rank)], device=info.device)
    dist.all_reduce(t)
    accel.barrier()
    result = {"info": _info_dict(info), "sum_of_ranks": t.item()}
    (out_dir / f"rank{info.rank}.json").write_text(json.dumps(result))
    accel.destroy_distributed()
    assert not dist.is_initialized()


def die(out_dir: Path, stall: bool = False) -> None:
    info = accel.init_distributed()
    dist.barrier()  # both ranks are in the group
    if info.rank == 1:
        if stall:  # alive but never arrives: rank 0 must give up after the timeout
            time.sleep(3 * float(os.environ["ACCEL_DIST_TIMEOUT"]))
        os._exit(3)
    time.sleep(1.0)
    start = time.monotonic()
    try:
        accel.barrier()
        t = torch.ones(1, device=info.device)
        dist.all_reduce(t)
        outcome = {"error": None}
    except accel.DistributedError as exc:
        outcome = {"error": str(exc), "type": type(exc).__name__}
    outcome["elapsed"] = time.monotonic() - start
    (out_dir / f"rank{info.rank}.json").write_text(json.dumps(outcome))
    os._exit(0)  # the group cannot be torn down cleanly with a peer gone


if __name__ == "__main__":
    mode, out = sys.argv[1], Path(sys.argv[2])
    modes = {"train": train, "info": info_mode, "die": die, "stall": lambda o: die(o, stall=True)}
    modes[mode](out)
