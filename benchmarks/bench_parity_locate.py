"""What ``accel parity --locate`` costs: fingerprinting per training step, and a whole locate, as ratios to a plain run.

Run: ``python benchmarks/bench_parity_locate.py [--backend cpu|neuron] [--e2e]``. Not a test.

In-process (:mod:`harness`: interleaved, shuffled rounds, thread CPU time, median and range),
one training step of ``examples/dropout_train.py``'s classifier (AdamW, batch 64) against the
same step with :mod:`accel_abstraction.parity.fingerprint`'s global module hooks:

* *armed*: the hooks are registered but the step is not one to fingerprint (what every step
  before the located one costs in a ``--locate`` re-run);
* *fingerprinted*: every module output and gradient, and every ATen op inside modules,
  fingerprinted (copied to the CPU, statistics, BLAKE2 hash), as at the located steps and at
  every step of a ``--record --locate`` run 0.

``--e2e`` also times whole ``accel parity`` invocations (cpu vs emulated neuron, one GELU
changed on neuron, exact RNG), alternating with and without ``--locate``: the wall-time ratio
of a diverging comparison that is located to one that is not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.modules import module as nn_module

import accel_abstraction as accel
from accel_abstraction.parity import fingerprint as fp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT / "examples"))
import harness  # noqa: E402
from dropout_train import Classifier  # noqa: E402


def make_step(width: int):  # type: ignore[no-untyped-def]
    dev = accel.device()
    torch.manual_seed(0)
    model = Classifier(16, width, 8, 2, 0.2).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 16).to(dev), torch.randint(8, (64,)).to(dev)

    def step() -> None:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()

    return step


def with_recorder(step, positions: set[int] | None):  # type: ignore[no-untyped-def]
    sink = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - kept for the benchmark's life
    recorder = fp.Recorder(sink, positions, stop=False)
    recorder.mode = fp._dispatch_mode(recorder)

    def run() -> None:
        handles = [
            nn_module.register_module_forward_pre_hook(recorder.pre),
            nn_module.register_module_forward_hook(recorder.post, always_call=True),
        ]
        try:
            step()
            recorder.step_done()
        finally:
            for h in handles:
                h.remove()

    return run


def e2e(rounds: int) -> None:
    script = str(ROOT / "examples" / "dropout_train.py")
    env = {**os.environ, "ACCEL_NEURON_EMULATE_RNG": "cpu"}
    base = [sys.executable, "-m", "accel_abstraction", "parity", script, "--backends", "cpu,neuron", "--no-plot", "--no-progress"]
    times: dict[bool, list[float]] = {False: [], True: []}
    for i in range(rounds):
        for locate in (i % 2 == 0, i % 2 != 0):
            command = [*base, "--out", f"/tmp/bench-locate-{locate}", *(["--locate"] if locate else []), "--", "--tanh-gelu-on", "neuron"]
            start = time.perf_counter()
            subprocess.run(command, env=env, capture_output=True, timeout=1200)
            times[locate].append(time.perf_counter() - start)
    plain, located = statistics.median(times[False]), statistics.median(times[True])
    print(f"accel parity, diverging, 2 legs: {plain:.1f} s; with --locate: {located:.1f} s: {located / plain:.2f}x "
          f"(median of {rounds} each, wall time, alternating)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--e2e", action="store_true", help="also time whole accel parity invocations")
    parser.add_argument("--e2e-rounds", type=int, default=2)
    harness.add_common_args(parser, rounds=9)
    args = parser.parse_args()
    harness.setup_threads(args.threads)
    backend = accel.use(args.backend)
    step = make_step(args.width)
    cases = [
        harness.Case("hooks armed, step not fingerprinted", with_recorder(step, set()), step, "plain step"),
        harness.Case("step fingerprinted (modules, grads, ops)", with_recorder(step, None), step, "plain step"),
    ]
    results = harness.compare_calls(cases, args.rounds, args.budget, args.seed)
    harness.print_results(f"--locate fingerprinting per training step on {backend.name!r}", results, args.threads)
    if args.json:
        harness.write_json(args.json, "parity_locate", results, args.threads, {"backend": backend.name})
    if args.e2e:
        e2e(args.e2e_rounds)


if __name__ == "__main__":
    main()
