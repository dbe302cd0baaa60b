"""Step time of the emulated neuron device against the CPU, measured in the same process.

For single small ops and for full training steps (forward, backward, AdamW) of each
workload it runs the same code on the CPU and on the emulated ``neuron`` device, in
interleaved shuffled rounds (:mod:`harness`: thread CPU time, median and range), and prints
the ratio (emulated / CPU; 1.00 = no overhead) and the emulator's overhead per op in
microseconds. Each runs twice, in two processes: with the compiled per-op path (the C++
core, ``ACCEL_NEURON_EMULATOR_HOT_PATH=native``) and with the pure-Python one
(``ACCEL_NEURON_EMULATOR_HOT_PATH=python``), printed side by side.
Targets (issue 26): <= 3 us overhead per small op; MLP 3x512 batch 8 step <= 1.15x; transformer
block <= 1.05x; the main job's step (examples/train.py) <= 1.05x, timed in interleaved step pairs
(``--pairs``, one step of each side per pair; median and range over blocks of ``--block`` pairs;
``--step-pairs N`` times the other step cases that way too). Run:
``python benchmarks/bench_neuron_emulator.py [--ops-only] [--hot-path native|python] [--pairs N] [--json FILE]``.
``--test-ops`` times instead the calls PyTorch's device-generic test files make most between their
ops (random inputs, host copies, scalar reads, small constructions, out=, in-place views, ``resize_``,
``assert_close``, ``copy.deepcopy``, ``isclose``, the device's RNG state round trip, a recurrent layer's
forward and backward; issue 35: suites' wall time on neuron <= 1.10x the CPU's), against the same call
on the CPU.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOT_PATH_ENV = "ACCEL_NEURON_EMULATOR_HOT_PATH"
PATHS = ("native", "python")
LABEL = {"native": "compiled", "python": "python"}


def _mlp_step(device: str, batch: int) -> Callable[[], None]:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512)
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    x = torch.randn(batch, 512).to(device)
    y = torch.randn(batch, 512).to(device)

    def step() -> None:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def _transformer_step(device: str, batch: int) -> Callable[[], None]:
    torch.manual_seed(0)
    model = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.1, batch_first=True).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    x = torch.randn(batch, 64, 256).to(device)

    def step() -> None:
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def _main_job_step(device: str, batch: int) -> Callable[[], None]:
    """One training step of the main job (examples/train.py, default sizes), as its loop runs it."""
    spec = importlib.util.spec_from_file_location("accel_example_train", ROOT / "examples" / "train.py")
    assert spec is not None and spec.loader is not None
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    torch.manual_seed(0)
    data = train.CharData(train.make_corpus(), seed=0)
    model = train.TinyGPT(data.vocab_size, 32, 64, 4, 2, 0.1).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    x_cpu, y_cpu = data.batch(batch, 32)

    def step() -> None:
        x, y = x_cpu.to(device), y_cpu.to(device)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.view(-1, logits.size(-1)).float(), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()

    return step


def _op_cases(device: str) -> dict[str, Callable[[], object]]:
    """Single small ops (so the op itself costs little), by name."""
    torch.manual_seed(0)
    a, b = torch.randn(8, 8).to(device), torch.randn(8, 8).to(device)
    w = torch.randn(8, 8).to(device)
    xs = [torch.randn(8).to(device) for _ in range(4)]

    def chain() -> object:
        # each op consumes the previous op's fresh result, as in a model
        return torch.relu(torch.add(torch.mul(a, b), b))

    return {
        "add": lambda: torch.add(a, b),
        "mul_ (in-place)": lambda: a.mul_(1.0),
        "linear": lambda: nn.functional.linear(a, w),
        "relu": lambda: torch.relu(a),
        "sum": lambda: a.sum(),
        "view": lambda: a.view(64),
        "t (view)": lambda: a.t(),
        "_foreach_add_ (4 tensors)": lambda: torch._foreach_add_(xs, 1.0),
        "mul->add->relu chain (per op)": chain,
    }


def _test_op_cases(device: str) -> dict[str, Callable[[], object]]:
    """What PyTorch's device-generic test files call most between their ops (issue 35), by name.

    Random inputs, copies to and from the host, reading a scalar back, small constructions and
    comparisons: a test of tiny ops pays these more than the ops themselves.
    """
    from torch.testing import make_tensor

    torch.manual_seed(0)
    a = torch.randn(64, 64).to(device)
    c = torch.randn(64, 64)
    x = torch.randn(4, 4).to(device)
    out = torch.empty(4, 4).to(device)
    y = (x + 1e-7).to(device)
    v = torch.randn(16).to(device)
    q = torch.randn(2, 2, 4, 8).to(device)  # test_transformers' tiny attention inputs
    qg = q.clone().requires_grad_()
    return {
        "randn 64x64": lambda: torch.randn(64, 64, device=device),
        "randint(0, 10, (64,))": lambda: torch.randint(0, 10, (64,), device=device),
        "make_tensor 64x64 float32": lambda: make_tensor((64, 64), device=device, dtype=torch.float32),
        "a.cpu() 64x64": lambda: a.cpu(),
        "c.to(device) 64x64": lambda: c.to(device),
        "bool((a == a).all())": lambda: bool((a == a).all()),
        "a[0, 0].item()": lambda: a[0, 0].item(),
        "torch.tensor([1, 2, 3])": lambda: torch.tensor([1, 2, 3], device=device),
        "zeros(8)": lambda: torch.zeros(8, device=device),
        "empty 64x64": lambda: torch.empty(64, 64, device=device),
        "add 4x4": lambda: torch.add(x, x),
        "add 4x4, out=": lambda: torch.add(x, x, out=out),
        "x.t_() 4x4 (in-place view)": lambda: x.t_(),
        "empty(0).resize_(64) (grows)": lambda: torch.empty(0, device=device).resize_(64),
        "assert_close 64x64": lambda: torch.testing.assert_close(a, a),
        "copy.deepcopy 4x4": lambda: copy.deepcopy(x),  # test_modules copies inputs and gradients
        "torch.isclose 4x4": lambda: torch.isclose(x, y),  # every assertEqual of a float tensor
        "dot 16": lambda: torch.dot(v, v),  # nn.LinearCrossEntropyLoss's chunks (test_modules)
        "x.neg_() 4x4": lambda: x.neg_(),
        # on neuron: ATen's composite with the CPU's kernel choice (csrc/sdpa.cpp), or the Python kernel
        "sdpa 2x2x4x8": lambda: nn.functional.scaled_dot_product_attention(q, q, q),
        "sdpa 2x2x4x8 fwd+bwd": lambda: (
            nn.functional.scaled_dot_product_attention(qg, qg, qg).sum().backward()
        ),
        # freeze_rng_state saves and restores the device's generator (the CPU: its own, the direct call)
        "get_rng_state + set_rng_state": _rng_round_trip(device),
        # test_modules' recurrent layers: on neuron each call is a CPU island (cpu_islands.py)
        "nn.RNN 2 layers fwd+bwd": _recurrent_step(device, nn.RNN),
        "nn.LSTM 2 layers fwd+bwd": _recurrent_step(device, nn.LSTM),
    }


def _recurrent_step(device: str, cls: type[nn.RNNBase]) -> Callable[[], None]:
    """Forward and backward of a small two-layer recurrent layer on `device`."""
    torch.manual_seed(0)
    layer = cls(4, 8, num_layers=2).to(device)
    x = torch.randn(3, 5, 4).to(device).requires_grad_(True)

    def step() -> None:
        out, _ = layer(x)
        out.sum().backward()

    return step


def _rng_round_trip(device: str) -> Callable[[], None]:
    """Save and restore the generator state of `device` (the CPU: the CPU default generator's)."""
    if device == "cpu":
        return lambda: torch.set_rng_state(torch.get_rng_state())
    module = torch.get_device_module(device)
    return lambda: module.set_rng_state(module.get_rng_state())


WORKLOADS = (
    ("MLP 3x512 + AdamW, batch 8 (overhead-bound)", _mlp_step, 8),
    ("MLP 3x512 + AdamW, batch 64", _mlp_step, 64),
    ("MLP 3x512 + AdamW, batch 256", _mlp_step, 256),
    ("transformer block d256 (dropout) + AdamW, 8x64", _transformer_step, 8),
)
#: The main job's step, timed in interleaved step pairs (harness.compare_pairs): a step takes
#: milliseconds, and the few rounds compare_calls fits in its budget ranged 0.80-1.22x on a busy machine.
MAIN_JOB = ("main job step (examples/train.py TinyGPT, 16x32)", _main_job_step, 16)


def _measure(args: argparse.Namespace) -> list[harness.Result]:
    """This process's cases, on the per-op path the environment selects."""
    from accel_neuron import emulator
    from accel_neuron.emulator import native

    emulator.install()
    wanted = os.environ.get(HOT_PATH_ENV, "native")
    if native.hot_path() != wanted:
        raise SystemExit(f"asked for the {wanted} per-op path, the emulator runs the {native.hot_path()} one")
    make_ops, prefix = (_test_op_cases, "test op") if args.test_ops else (_op_cases, "op")
    cpu_ops, neuron_ops = make_ops("cpu"), make_ops("neuron")
    cases = [
        harness.Case(f"{prefix}: {name}", neuron_ops[name], cpu_ops[name], "the same call on the CPU") for name in cpu_ops
    ]
    if args.test_ops:
        return harness.compare_calls(cases, args.rounds, args.budget, args.seed)
    steps = [] if args.ops_only else [
        harness.Case(f"step: {name}", make("neuron", batch), make("cpu", batch), "the same step on the CPU")
        for name, make, batch in WORKLOADS
    ]  # fmt: skip
    if args.step_pairs > 0:  # every step case in interleaved pairs, as the main job's
        paired = [harness.compare_pairs(case, args.step_pairs, args.block, args.seed) for case in steps]
        results = harness.compare_calls(cases, args.rounds, args.budget, args.seed) + paired
    else:
        results = harness.compare_calls(cases + steps, args.rounds, args.budget, args.seed)
    if not args.ops_only and args.pairs > 0:
        name, make, batch = MAIN_JOB
        case = harness.Case(f"step pairs: {name}", make("neuron", batch), make("cpu", batch), "the same step on the CPU")
        results.append(harness.compare_pairs(case, args.pairs, args.block, args.seed))
    return results


def _json_name(args: argparse.Namespace) -> str:
    return "neuron_emulator_test_ops" if args.test_ops else "neuron_emulator"


def _overhead_us(name: str, r: dict) -> float:
    per = 3 if "chain" in name else 1
    return (r["ours"] - r["direct"]) / per / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops-only", action="store_true", help="only the per-op cases")
    parser.add_argument(
        "--test-ops", action="store_true",
        help="only the calls PyTorch's test files make most (random inputs, host copies, item, assert_close)",
    )  # fmt: skip
    parser.add_argument(
        "--hot-path", choices=PATHS, help="measure one per-op path in this process (default: both, side by side)"
    )
    parser.add_argument(
        "--pairs", type=int, default=400, help="interleaved step pairs of the main job (0: skip it; default %(default)s)"
    )
    parser.add_argument(
        "--step-pairs", type=int, default=0,
        help="time the other step cases in this many interleaved pairs as well, instead of in rounds "
        "(steady ratios on a loaded machine; benchmarks/ab_trees.py passes it; default: rounds)",
    )  # fmt: skip
    parser.add_argument(
        "--block", type=int, default=40, help="pairs per block: the main job's range is over block medians (default %(default)s)"
    )
    harness.add_common_args(parser, rounds=7)
    args = parser.parse_args()
    harness.setup_threads(args.threads)

    if args.hot_path:
        os.environ[HOT_PATH_ENV] = args.hot_path
        results = _measure(args)
        harness.print_results(
            f"emulated neuron ({LABEL[args.hot_path]} per-op path) vs the CPU (ops 8x8 float32; steps fwd+bwd+AdamW)",
            results,
            args.threads,
        )
        if args.json:
            harness.write_json(args.json, _json_name(args), results, args.threads)
        return

    # both paths, each in its own process (the path is fixed when the emulator installs)
    by_path: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in PATHS:
            out = Path(tmp) / f"{path}.json"
            cmd = [sys.executable, __file__, "--hot-path", path, "--json", str(out), "--rounds", str(args.rounds)]
            cmd += ["--budget", str(args.budget), "--threads", str(args.threads), "--seed", str(args.seed)]
            cmd += ["--pairs", str(args.pairs), "--step-pairs", str(args.step_pairs), "--block", str(args.block)]
            cmd += ["--ops-only"] if args.ops_only else []
            cmd += ["--test-ops"] if args.test_ops else []
            subprocess.run(cmd, check=True, env={**os.environ, HOT_PATH_ENV: path})
            by_path[path] = json.loads(out.read_text())["benchmarks"][_json_name(args)]["results"]
    print(f"\nload average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'case':58} {'compiled':>9} {'python':>9}   overhead per op (us): compiled / python")
    for name in by_path["native"]:
        n, p = by_path["native"][name], by_path["python"][name]
        extra = f"   {_overhead_us(name, n):6.1f} / {_overhead_us(name, p):6.1f}" if "op: " in name else ""
        print(f"{name:58} {n['ratio']:8.3f}x {p['ratio']:8.3f}x{extra}")
    if args.json:
        merged = {f"{name} [{LABEL[path]}]": r for path in PATHS for name, r in by_path[path].items()}
        data = json.loads(args.json.read_text()) if args.json.exists() else {"schema": 1, "benchmarks": {}}
        data["benchmarks"][_json_name(args)] = {"machine": harness.machine(args.threads), "results": merged}
        tmp_path = args.json.with_suffix(".tmp")
        tmp_path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        tmp_path.replace(args.json)


if __name__ == "__main__":
    main()
