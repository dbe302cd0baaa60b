"""Step time of the emulated neuron device against the CPU, measured in the same process.

For single small ops and for full training steps (forward, backward, AdamW) of each
workload it runs the same code on the CPU and on the emulated ``neuron`` device, in
interleaved shuffled rounds (:mod:`harness`: thread CPU time, median and range), and prints
the ratio (emulated / CPU; 1.00 = no overhead) and the emulator's overhead per op in
microseconds. Target: every step <= 1.3x. Run:
``python benchmarks/bench_neuron_emulator.py [--ops-only] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402


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


WORKLOADS = (
    ("MLP 3x512 + AdamW, batch 8 (overhead-bound)", _mlp_step, 8),
    ("MLP 3x512 + AdamW, batch 64", _mlp_step, 64),
    ("MLP 3x512 + AdamW, batch 256", _mlp_step, 256),
    ("transformer block d256 (dropout) + AdamW, 8x64", _transformer_step, 8),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops-only", action="store_true", help="only the per-op cases")
    harness.add_common_args(parser, rounds=7)
    args = parser.parse_args()
    harness.setup_threads(args.threads)

    from accel_neuron import emulator

    emulator.install()
    cpu_ops, neuron_ops = _op_cases("cpu"), _op_cases("neuron")
    cases = [harness.Case(f"op: {name}", neuron_ops[name], cpu_ops[name], "the same op on the CPU") for name in cpu_ops]
    if not args.ops_only:
        cases += [
            harness.Case(f"step: {name}", make("neuron", batch), make("cpu", batch), "the same step on the CPU")
            for name, make, batch in WORKLOADS
        ]
    results = harness.compare_calls(cases, args.rounds, args.budget, args.seed)
    harness.print_results("emulated neuron vs the CPU (ops 8x8 float32; steps forward+backward+AdamW)", results, args.threads)
    for r in results:
        if r.name.startswith("op: "):
            per = 3 if "chain" in r.name else 1
            print(f"{r.name[4:]:32} overhead {(r.ours_ns - r.direct_ns) / per / 1e3:6.1f} us per op")
    if args.json:
        harness.write_json(args.json, "neuron_emulator", results, args.threads)


if __name__ == "__main__":
    main()
