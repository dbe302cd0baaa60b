"""FSDP2 step time and collective bandwidth: emulated neuron ranks against cpu (gloo) ranks.

Starts ``torchrun --nproc-per-node=2`` on 127.0.0.1 once per backend (alternating, for
``--rounds`` rounds, so both see the same machine load) and prints:

* the median FSDP2 training step (``fully_shard`` per block + root, SGD) on 2 emulated
  ``neuron`` ranks and on 2 ``cpu`` ranks, and their ratio (goal: <= 1.5);
* inside the emulated run, the bandwidth of all-reduce, all-gather-into-tensor and
  reduce-scatter on the emulated ``neuron`` group (neuron tensors, staged to the CPU) and
  on a plain gloo group over the same ranks (CPU tensors): the cost of the staging.

Run: ``python benchmarks/bench_distributed.py [--steps N] [--rounds R] [--dim D]``.
Set ``OMP_NUM_THREADS`` as for training (1 on a shared 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COLLECTIVE_MIB = (1, 16)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- inside each rank ------------------------------------------------------------------------


def _fsdp2_step_times(device: object, dim: int, steps: int) -> list[float]:
    import torch
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (2,))  # type: ignore[attr-defined]
    torch.manual_seed(0)
    blocks = [nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)) for _ in range(4)]
    model = nn.Sequential(*blocks).to(device)
    for block in blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(32, dim).to(device)
    times = []
    for i in range(steps + 2):  # two warm-up steps
        start = time.perf_counter()
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - start)
    return times


def _bandwidth(groups: dict[str, tuple[object, object]], mib: int, reps: int = 9) -> dict[str, dict[str, float]]:
    """GiB/s (payload bytes per rank / median time) of three collectives on each of ``groups``.

    ``groups`` maps a label to ``(process group, device)``; the groups take turns within
    every repetition, so they see the same machine load.
    """
    import torch
    import torch.distributed as dist

    n = mib * 2**20 // 4
    ops = {}
    for label, (group, device) in groups.items():
        world = dist.get_world_size(group)
        t = torch.ones(n, device=device)
        gathered = torch.empty(n * world, device=device)
        piece = torch.empty(n // world, device=device)
        ops[label] = {
            "all_reduce": lambda t=t, g=group: dist.all_reduce(t, group=g),
            "all_gather_into_tensor": lambda o=gathered, t=t, g=group: dist.all_gather_single(o, t, group=g),
            "reduce_scatter_tensor": lambda o=piece, t=t, g=group: dist.reduce_scatter_single(o, t, group=g),
        }
    out: dict[str, dict[str, float]] = {label: {} for label in groups}
    for name in ops[next(iter(groups))]:
        runs: dict[str, list[float]] = {label: [] for label in groups}
        for rep in range(reps + 1):  # the first round warms up
            for label, (group, _) in groups.items():
                dist.barrier(group=group)
                start = time.perf_counter()
                ops[label][name]()
                if rep:
                    runs[label].append(time.perf_counter() - start)
        for label in groups:
            out[label][name] = mib / 1024 / statistics.median(runs[label])
    return out


def worker(out: Path, dim: int, steps: int) -> None:
    import torch.distributed as dist

    import accel_abstraction as accel

    info = accel.init_distributed()
    result: dict[str, object] = {"step_s": _fsdp2_step_times(info.device, dim, steps)}
    if info.backend != "gloo":
        gloo = dist.new_group(backend="gloo")
        result["bandwidth"] = {
            f"{mib} MiB": _bandwidth({"emulated": (dist.group.WORLD, info.device), "gloo": (gloo, "cpu")}, mib)
            for mib in COLLECTIVE_MIB
        }
    if info.rank == 0:
        out.write_text(json.dumps(result))
    accel.destroy_distributed()


# -- the driver ------------------------------------------------------------------------------------


def _launch(backend: str, dim: int, steps: int, out: Path) -> dict:
    env = dict(os.environ, ACCEL_BACKEND=backend, ACCEL_DIST_TIMEOUT="300", PYTHONUNBUFFERED="1")
    env.setdefault("OMP_NUM_THREADS", "1")
    if backend == "neuron":
        env.update(ACCEL_NEURON_EMULATE="1")
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--master-addr=127.0.0.1",
        f"--master-port={_free_port()}", __file__, "--worker", str(out), "--dim", str(dim), "--steps", str(steps),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{backend} run failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.dim, args.steps)
        return
    steps: dict[str, list[float]] = {"cpu": [], "neuron": []}
    bandwidth: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for backend in ("cpu", "neuron"):
                res = _launch(backend, args.dim, args.steps, Path(tmp) / f"{backend}{r}.json")
                steps[backend] += res["step_s"]
                if "bandwidth" in res:
                    bandwidth.append(res["bandwidth"])
    cpu, neuron = statistics.median(steps["cpu"]), statistics.median(steps["neuron"])
    print(f"FSDP2, 2 ranks, 4 blocks of {args.dim}->{4 * args.dim}->{args.dim}, batch 32, "
          f"{args.steps} steps x {args.rounds} rounds (median step)")
    print(f"  cpu (gloo)        {cpu * 1e3:9.2f} ms")
    print(f"  neuron (emulated) {neuron * 1e3:9.2f} ms")
    print(f"  ratio emulated/cpu {neuron / cpu:6.2f}x  (goal <= 1.5x)")
    print("collective bandwidth per rank, GiB/s: emulated neuron group vs gloo alone (median of rounds)")
    for size in bandwidth[0]:
        for op in bandwidth[0][size]["emulated"]:
            emu = statistics.median(b[size]["emulated"][op] for b in bandwidth)
            gloo = statistics.median(b[size]["gloo"][op] for b in bandwidth)
            print(f"  {op:24s} {size:>7s}  emulated {emu:7.3f}  gloo {gloo:7.3f}  ratio gloo/emulated {gloo / emu:5.2f}x")


if __name__ == "__main__":
    main()
