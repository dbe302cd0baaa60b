"""PyTorch's parallelism APIs on any backend, each against a single-process reference.

``python -m torch.distributed.run --nproc-per-node=N parallel_worker.py GROUP OUT_DIR CKPT_DIR``;
every rank writes ``OUT_DIR/rank<R>.json``: for each scenario, the largest absolute
difference from the reference (``max_diff``) and whether it is zero (``bitwise``).

* ``two`` (2 ranks): FSDP2 (``fully_shard`` per block + root), FSDP2 with a bf16-params /
  fp32-reduce mixed precision policy, FSDP2 with activation checkpointing, DDP with
  ``no_sync`` gradient accumulation, tensor parallelism (``ColwiseParallel`` /
  ``RowwiseParallel``) on an MLP and on an attention block; then a DCP save of the FSDP2
  model to ``CKPT_DIR``.
* ``four`` (4 ranks): a 2 x 2 (data x tensor parallel) mesh, and a DCP load on 4 ranks of
  the checkpoint ``two`` saved on 2 (resharding).

The data-parallel references replay each rank's shard of the batch in this one process,
average the gradients as the collective does (``(g0 + g1) / 2``), and step; the tensor
parallel ones run the unsharded module. Everything runs on ``info.device`` from
``accel.init_distributed()``: the same script on ``cpu`` (gloo) and emulated ``neuron``.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.nn.parallel import DistributedDataParallel as DDP

import accel_abstraction as accel

DIM, HIDDEN, BATCH, STEPS, LR = 8, 16, 8, 3, 0.1


class Block(nn.Module):
    """Residual MLP block: ``x + fc2(tanh(fc1(x)))``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(DIM, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.tanh(self.fc1(x)))


class Attention(nn.Module):
    """Multi-head self-attention whose head count follows the (possibly sharded) projections."""

    def __init__(self, heads: int = 2) -> None:
        super().__init__()
        self.head_dim = DIM // heads
        self.q, self.k, self.v, self.o = (nn.Linear(DIM, DIM) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape

        def heads(p: torch.Tensor) -> torch.Tensor:
            return p.view(b, t, -1, self.head_dim).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        att = (q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)).softmax(-1)
        return self.o((att @ v).transpose(1, 2).reshape(b, t, -1))


def _model(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(Block(), Block(), nn.Linear(DIM, DIM))


def _data(device: torch.device, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(BATCH, DIM, generator=g).to(device), torch.randn(BATCH, DIM, generator=g).to(device)


def _loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (out.float() - y).square().mean()


def _full(t: torch.Tensor) -> torch.Tensor:
    return (t.full_tensor() if isinstance(t, DTensor) else t).detach().to("cpu", torch.float64)


def _compare(got: nn.Module, want: nn.Module) -> dict[str, object]:
    """Largest absolute parameter difference (``max_diff``) and whether all are equal (``bitwise``)."""
    diffs = [
        (_full(a) - _full(b)).abs().max().item()
        for a, b in zip(got.state_dict().values(), want.state_dict().values(), strict=True)
    ]
    return {"max_diff": max(diffs), "bitwise": max(diffs) == 0.0}


def _replay(model: nn.Module, shards: list[tuple[torch.Tensor, torch.Tensor]], steps: int = STEPS,
            cast: torch.dtype | None = None) -> nn.Module:
    """Single-process data-parallel reference: per-shard gradients, averaged, one SGD step each."""
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for _ in range(steps):
        grads: list[list[torch.Tensor]] = []
        for x, y in shards:
            work = copy.deepcopy(model).to(cast) if cast else model
            work.zero_grad()
            _loss(work(x.to(cast) if cast else x), y).backward()
            grads.append([p.grad.float() for p in work.parameters()])
        for p, *gs in zip(model.parameters(), *grads, strict=True):
            p.grad = sum(gs[1:], gs[0]) / len(gs)  # g0 + g1 + ..., left to right
        opt.step()
    return model


def _train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int = STEPS) -> nn.Module:
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for _ in range(steps):
        opt.zero_grad()
        _loss(model(x), y).backward()
        opt.step()
    return model


def _shards(device: torch.device, ways: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    x, y = _data(device)
    n = BATCH // ways
    return [(x[i * n:(i + 1) * n], y[i * n:(i + 1) * n]) for i in range(ways)]


def _fsdp(model: nn.Module, mesh: DeviceMesh, **kw: object) -> nn.Module:
    for block in list(model)[:2]:
        fully_shard(block, mesh=mesh, **kw)
    fully_shard(model, mesh=mesh, **kw)
    return model


# -- the scenarios -------------------------------------------------------------------------


def fsdp2(device: torch.device, mesh: DeviceMesh, rank: int) -> dict[str, object]:
    shards = _shards(device, mesh.size())
    got = _train(_fsdp(_model().to(device), mesh), *shards[rank])
    return _compare(got, _replay(_model().to(device), shards))


def fsdp2_mixed_precision(device: torch.device, mesh: DeviceMesh, rank: int) -> dict[str, object]:
    """bf16 parameters for compute, fp32 gradient reduction, fp32 sharded master weights."""
    shards = _shards(device, mesh.size())
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    got = _train(_fsdp(_model().to(device), mesh, mp_policy=policy), *shards[rank])
    return _compare(got, _replay(_model().to(device), shards, cast=torch.bfloat16))


def fsdp2_activation_checkpointing(device: torch.device, mesh: DeviceMesh, rank: int) -> dict[str, object]:
    """Blocks recompute their activations in backward; the result must not change at all."""
    shards = _shards(device, mesh.size())
    model = _model().to(device)
    for i in range(2):
        model[i] = checkpoint_wrapper(model[i])
    got = _train(_fsdp(model, mesh), *shards[rank])
    plain = _train(_fsdp(_model().to(device), mesh), *shards[rank])
    # checkpoint_wrapper renames the parameters; compare in order.
    result = _compare(got, plain)
    reference = _compare(got, _replay(_model().to(device), shards))
    return {**result, "vs_reference": reference["max_diff"]}


def ddp_no_sync(device: torch.device, mesh: DeviceMesh, rank: int) -> dict[str, object]:
    """Two micro-batches per step, the first under ``no_sync()``; gradients averaged once."""
    world = mesh.size()
    shards = _shards(device, world)
    model = DDP(_model().to(device))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = shards[rank]
    half = x.shape[0] // 2
    for _ in range(STEPS):
        opt.zero_grad()
        with model.no_sync():
            (_loss(model(x[:half]), y[:half]) / 2).backward()
        (_loss(model(x[half:]), y[half:]) / 2).backward()
        opt.step()
    # Reference: each rank's accumulated gradient, divided by the world size, summed (as DDP does).
    ref = _model().to(device)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=LR)
    for _ in range(STEPS):
        per_rank = []
        for xs, ys in shards:
            ref.zero_grad()
            (_loss(ref(xs[:half]), ys[:half]) / 2).backward()
            (_loss(ref(xs[half:]), ys[half:]) / 2).backward()
            per_rank.append([p.grad / world for p in ref.parameters()])
        for p, *gs in zip(ref.parameters(), *per_rank, strict=True):
            p.grad = sum(gs[1:], gs[0])
        ref_opt.step()
    return _compare(model.module, ref)


def _tp_step(module: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, nn.Module]:
    out = module(x)
    opt = torch.optim.SGD(module.parameters(), lr=LR)
    out.square().mean().backward()
    opt.step()
    return out, module


def _tp(build: Callable[[], nn.Module], plan: dict[str, object], device: torch.device,
        mesh: DeviceMesh) -> dict[str, object]:
    x = torch.randn(2, 4, DIM, generator=torch.Generator().manual_seed(3)).to(device)
    torch.manual_seed(0)
    sharded = parallelize_module(build().to(device), mesh, plan)
    torch.manual_seed(0)
    out, got = _tp_step(sharded, x)
    ref_out, want = _tp_step(build().to(device), x)
    result = _compare(got, want)
    out_diff = (_full(out) - _full(ref_out)).abs().max().item()
    return {"max_diff": max(result["max_diff"], out_diff), "bitwise": result["bitwise"] and out_diff == 0.0}


def tp_mlp(device: torch.device, mesh: DeviceMesh, rank: int) -> dict[str, object]:
    return _tp(Block, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()}, device, mesh)


def tp_attention(device: torch.device, mesh: DeviceMesh, rank: int) -> dict[str, object]:
    plan = {"q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(), "o": RowwiseParallel()}
    return _tp(Attention, plan, device, mesh)


def mesh_2d(device: torch.device, rank: int) -> dict[str, object]:
    """2 data-parallel x 2 tensor-parallel ranks: TP inside each block, FSDP2 across the data axis."""
    mesh = init_device_mesh(device.type, (2, 2), mesh_dim_names=("dp", "tp"))
    model = _model().to(device)
    for block in list(model)[:2]:
        parallelize_module(block, mesh["tp"], {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    _fsdp(model, mesh["dp"])
    shards = _shards(device, 2)
    got = _train(model, *shards[mesh["dp"].get_local_rank()])
    return _compare(got, _replay(_model().to(device), shards))


def dcp_save(model: nn.Module, ckpt: Path, rank: int) -> None:
    dcp.save({"model": get_model_state_dict(model)}, checkpoint_id=str(ckpt / "dcp"))
    full = {k: _full(v) for k, v in model.state_dict().items()}
    if rank == 0:
        torch.save(full, ckpt / "expected.pt")


def dcp_load(device: torch.device, ckpt: Path) -> dict[str, object]:
    """A fresh model sharded over 4 ranks loads the 2-rank checkpoint: every value as saved."""
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    model = _fsdp(_model(seed=7).to(device), mesh)
    state = {"model": get_model_state_dict(model)}
    dcp.load(state, checkpoint_id=str(ckpt / "dcp"))
    set_model_state_dict(model, state["model"])
    expected = torch.load(ckpt / "expected.pt")
    diffs = [(_full(v) - expected[k]).abs().max().item() for k, v in model.state_dict().items()]
    shard_rows = [v.to_local().shape[0] for v in model.state_dict().values() if isinstance(v, DTensor)]
    return {"max_diff": max(diffs), "bitwise": max(diffs) == 0.0, "local_rows": shard_rows}


def main() -> None:
    group, out, ckpt = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    info = accel.init_distributed()
    device, rank = info.device, info.rank
    results: dict[str, object] = {"device": str(device), "backend": info.backend}
    if group == "two":
        mesh = init_device_mesh(device.type, (info.world_size,))
        for scenario in (fsdp2, fsdp2_mixed_precision, fsdp2_activation_checkpointing, ddp_no_sync,
                         tp_mlp, tp_attention):
            results[scenario.__name__] = scenario(device, mesh, rank)
        shards = _shards(device, info.world_size)
        dcp_save(_train(_fsdp(_model().to(device), mesh), *shards[rank]), ckpt, rank)
    else:
        results["mesh_2d"] = mesh_2d(device, rank)
        results["dcp_reshard_2_to_4"] = dcp_load(device, ckpt)
    (out / f"rank{rank}.json").write_text(json.dumps(results))
    accel.destroy_distributed()


if __name__ == "__main__":
    main()
