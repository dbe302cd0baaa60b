"""FSDP2 step time and collective bandwidth: emulated neuron ranks against cpu (gloo) ranks.

Starts ``torchrun --nproc-per-node=2`` on 127.0.0.1 once per backend and round (the order
of the two shuffled every round, so both see the same machine load) and reports, with
:mod:`harness` (ratio = ours / direct; median and range of the per-round ratios, by
process CPU time, wall time next to it):

* ``fsdp2 step``: the median FSDP2 training step (``fully_shard`` per block + root, SGD) on
  2 emulated ``neuron`` ranks against 2 ``cpu`` ranks (goal: ratio <= 1.5);
* ``<collective> <size>``: inside each emulated run, all-reduce, all-gather-into-tensor and
  reduce-scatter on the emulated ``neuron`` group (neuron tensors) against a plain gloo
  group over the same ranks (CPU tensors), taking turns in every repetition: the cost of
  staging through the emulated group.

Run: ``python benchmarks/bench_distributed.py [--rounds R] [--steps N] [--dim D] [--json F]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import harness  # noqa: E402

COLLECTIVE_MIB = (1, 16)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- inside each rank ------------------------------------------------------------------------


def _fsdp2_step_times(device: object, dim: int, steps: int) -> list[tuple[float, float]]:
    """(wall s, process CPU s) of each measured step."""
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
        wall, cpu = time.perf_counter(), time.process_time()
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        if i >= 2:
            times.append((time.perf_counter() - wall, time.process_time() - cpu))
    return times


def _collective_times(groups: dict[str, tuple[object, object]], mib: int, reps: int = 9) -> dict[str, object]:
    """Per repetition, (wall s, process CPU s) of three collectives on each of ``groups``.

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
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for name in ops[next(iter(groups))]:
        runs: dict[str, list[tuple[float, float]]] = {label: [] for label in groups}
        for rep in range(reps + 1):  # the first repetition warms up
            for label, (group, _) in groups.items():
                dist.barrier(group=group)
                wall, cpu = time.perf_counter(), time.process_time()
                ops[label][name]()
                if rep:
                    runs[label].append((time.perf_counter() - wall, time.process_time() - cpu))
        out[f"{name} {mib} MiB"] = runs
    return out


def worker(out: Path, dim: int, steps: int) -> None:
    import torch.distributed as dist

    import accel_abstraction as accel

    info = accel.init_distributed()
    result: dict[str, object] = {"step_s": _fsdp2_step_times(info.device, dim, steps)}
    if info.backend != "gloo":
        gloo = dist.new_group(backend="gloo")
        groups = {"emulated": (dist.group.WORLD, info.device), "gloo": (gloo, "cpu")}
        collectives: dict[str, object] = {}
        for mib in COLLECTIVE_MIB:
            collectives.update(_collective_times(groups, mib))
        result["collectives"] = collectives
    if info.rank == 0:
        out.write_text(json.dumps(result))
    accel.destroy_distributed()


# -- the driver ------------------------------------------------------------------------------------


def _launch(backend: str, args: argparse.Namespace, out: Path) -> dict:
    env = dict(os.environ, ACCEL_BACKEND=backend, ACCEL_DIST_TIMEOUT="300", PYTHONUNBUFFERED="1")
    if backend == "neuron":
        env.update(ACCEL_NEURON_EMULATE="1")
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--master-addr=127.0.0.1",
        f"--master-port={_free_port()}", __file__, "--worker", str(out), "--dim", str(args.dim),
        "--steps", str(args.steps),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{backend} run failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def _median(pairs: list[tuple[float, float]], which: int) -> float:
    return statistics.median(p[which] for p in pairs)


def _result(name: str, against: str, unit: str, rounds: list[tuple[list, list]]) -> harness.Result:
    """A harness result from per-round (ours, direct) lists of (wall s, process CPU s)."""
    res = harness.Result(name, against, 0.0, 0.0, unit=unit)
    for ours, direct in rounds:
        res.cpu_ratios.append(_median(ours, 1) / _median(direct, 1))
        res.wall_ratios.append(_median(ours, 0) / _median(direct, 0))
    res.ours_ns = statistics.median(_median(o, 0) for o, _ in rounds) * 1e3
    res.direct_ns = statistics.median(_median(d, 0) for _, d in rounds) * 1e3
    return res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="measured FSDP2 steps per launch")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    harness.add_common_args(parser, rounds=2)  # a round is two torchrun launches; --budget is not used
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.dim, args.steps)
        return
    harness.setup_threads(args.threads)
    rng = random.Random(args.seed)
    step_rounds: list[tuple[list, list]] = []
    coll_rounds: dict[str, list[tuple[list, list]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ["cpu", "neuron"]
            rng.shuffle(order)
            res = {b: _launch(b, args, Path(tmp) / f"{b}{r}.json") for b in order}
            step_rounds.append((res["neuron"]["step_s"], res["cpu"]["step_s"]))
            for name, runs in res["neuron"]["collectives"].items():
                coll_rounds.setdefault(name, []).append((runs["emulated"], runs["gloo"]))
    results = [_result("fsdp2 step, 2 ranks (goal <= 1.5)", "2 cpu ranks (gloo)", "ms/step", step_rounds)]
    results += [_result(name, "gloo group", "ms/call", rounds) for name, rounds in coll_rounds.items()]
    harness.print_results(
        f"emulated neuron vs cpu under torchrun (FSDP2: 4 blocks {args.dim}->{4 * args.dim}->{args.dim}, "
        f"batch 32, {args.steps} steps; process CPU time)",
        results,
        args.threads,
    )
    if args.json:
        harness.write_json(args.json, "distributed", results, args.threads, {"dim": args.dim, "steps": args.steps})


if __name__ == "__main__":
    main()
