"""Cost of keeping Parameter identity through ``Module.to()`` on the emulated neuron device.

``accel_abstraction.module_apply`` (on while neuron is selected) keeps tied parameters tied, lazy
ones lazy and every ``Parameter`` object the same (``m.weight is p``, as on CUDA) by swapping
the converted tensor into the original object. This times a round trip ``.to("neuron")`` then
``.cpu()`` of a small GPT (tied embedding, 2 blocks) and of a 3x512 MLP with the wrapper (ours)
against torch's own ``Module._apply`` (direct: new Parameter objects, the tie lost), in
interleaved shuffled rounds (:mod:`harness`). Run:
``python benchmarks/bench_module_to.py [--rounds N] [--budget S] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402

OWNER = "bench_module_to"


def _round_trip(model: nn.Module, keep: bool) -> Callable[[], None]:
    from accel_abstraction import module_apply

    def run() -> None:
        if keep:
            module_apply.enable(OWNER)
        try:
            model.to("neuron")
            model.cpu()
        finally:
            module_apply.disable(OWNER)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser, rounds=9, budget=12.0)
    args = parser.parse_args()
    harness.setup_threads(args.threads)
    from accel_neuron import emulator

    from tests.patches.tied_models import TiedLM

    emulator.install()
    models = {
        "tied GPT (2 blocks) .to(neuron).cpu()": (TiedLM(), TiedLM()),
        "MLP 3x512 .to(neuron).cpu()": tuple(
            nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512))
            for _ in range(2)
        ),
    }
    cases = [
        harness.Case(name, _round_trip(ours, True), _round_trip(stock, False), "torch's Module._apply")
        for name, (ours, stock) in models.items()
    ]
    results = harness.compare_calls(cases, args.rounds, args.budget, args.seed)
    harness.print_results("Module.to() keeping Parameter identity vs torch's", results, args.threads)
    if args.json:
        harness.write_json(args.json, "module_to", results, args.threads)


if __name__ == "__main__":
    main()
