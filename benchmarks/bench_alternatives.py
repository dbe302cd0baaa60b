"""accel-abstraction next to the layers users would otherwise pick, each against the same direct torch call.

Optional: measures whichever of DeepSpeed's accelerator, Hugging Face accelerate and Lightning
Fabric are installed (``pip install 'accel-abstraction[bench]'``; none is a dependency of the
library) and says which are not. Cases: seeding, autocast enter/exit, per-call device queries,
a training step (MLP 3xWIDTH, AdamW, fp32, batch 32) and first use (import + setup) against
``import torch``. Method: :mod:`harness`.

DeepSpeed's accelerator (0.19) has no autocast, and its training step needs
``deepspeed.initialize`` (a distributed engine with its own optimizer wrapper), so for
DeepSpeed only the per-call figures and first use are measured.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import harness  # noqa: E402

ALTERNATIVES = {"accel": "accel_abstraction", "deepspeed": "deepspeed", "accelerate": "accelerate", "fabric": "lightning"}


def installed() -> dict[str, bool]:
    return {name: importlib.util.find_spec(module) is not None for name, module in ALTERNATIVES.items()}


def _step_pair(width: int, wrap: Callable) -> tuple[Callable[[], None], Callable[[], None]]:
    """A training step through ``wrap`` and the plain one, over one model, optimizer and batch.

    Both sides train the very same tensors: two separately built models differ by up to
    ±10% from where their memory happens to lie (plain against plain measured 1.03x
    [0.88-1.19] at width 512), more than the layers being compared.
    """
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, width), torch.randn(32, width)

    def step(model: Any, opt: Any, backward: Callable[[Any], None]) -> Callable[[], None]:
        def run() -> None:
            loss = torch.nn.functional.mse_loss(model(x), y)
            backward(loss)
            opt.step()
            opt.zero_grad()

        return run

    ours = step(*wrap(model, opt))
    return ours, step(model, opt, lambda loss: loss.backward())


def cases(have: dict[str, bool], width: int) -> list[harness.Case]:
    import torch

    out: list[harness.Case] = []

    def autocast_case(label: str, ctx: Callable[[], object]) -> harness.Case:
        def ours() -> None:
            with ctx():  # type: ignore[attr-defined]
                pass

        def direct() -> None:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                pass

        return harness.Case(f"{label}: autocast enter/exit", ours, direct)

    if have["accel"]:
        import accel_abstraction as accel

        accel.use("cpu")
        out += [
            harness.Case("accel: manual_seed_all(0)", lambda: accel.manual_seed_all(0), lambda: torch.manual_seed(0)),
            autocast_case("accel", accel.autocast),
            harness.Case("accel: device_count()", lambda: accel.device_count(), lambda: torch.cpu.device_count()),
            harness.Case("accel: synchronize()", lambda: accel.synchronize(), lambda: torch.cpu.synchronize()),
            harness.Case(
                f"accel: train step w{width}",
                *_step_pair(width, lambda m, o: (m.to(accel.device()), o, lambda loss: loss.backward())),
            ),
        ]
    if have["deepspeed"]:
        from deepspeed.accelerator import get_accelerator

        acc = get_accelerator()
        out += [
            harness.Case("deepspeed: manual_seed(0)", lambda: acc.manual_seed(0), lambda: torch.manual_seed(0)),
            harness.Case("deepspeed: device_count()", lambda: acc.device_count(), lambda: torch.cpu.device_count()),
            harness.Case("deepspeed: synchronize()", lambda: acc.synchronize(), lambda: torch.cpu.synchronize()),
        ]
    if have["accelerate"]:
        from accelerate import Accelerator
        from accelerate.utils import set_seed

        accelerator = Accelerator(cpu=True, mixed_precision="bf16")
        plain = Accelerator(cpu=True)
        out += [
            harness.Case("accelerate: set_seed(0)", lambda: set_seed(0), lambda: torch.manual_seed(0)),
            autocast_case("accelerate", accelerator.autocast),
            harness.Case(
                f"accelerate: train step w{width}",
                *_step_pair(width, lambda m, o: (*plain.prepare(m, o), plain.backward)),
            ),
        ]
    if have["fabric"]:
        from lightning.fabric import Fabric, seed_everything

        fabric = Fabric(accelerator="cpu", precision="bf16-mixed", devices=1)
        plain_fabric = Fabric(accelerator="cpu", devices=1)
        out += [
            harness.Case("fabric: seed_everything(0)", lambda: seed_everything(0, verbose=False), lambda: torch.manual_seed(0)),
            autocast_case("fabric", fabric.autocast),
            harness.Case(
                f"fabric: train step w{width}",
                *_step_pair(width, lambda m, o: (*plain_fabric.setup(m, o), plain_fabric.backward)),
            ),
        ]
    return out


#: First use after ``import torch`` (the import of the library itself included), and the
#: packages each side loads, compiled to bytecode first as an install does.
FIRST_USE: dict[str, tuple[str, tuple[str, ...]]] = {
    "accel": (harness.ACCEL_FIRST_USE, harness.ACCEL_PACKAGES),
    "deepspeed": ("from deepspeed.accelerator import get_accelerator; get_accelerator().device_name()", ("deepspeed",)),
    "accelerate": ("from accelerate import Accelerator; Accelerator(cpu=True)", ("accelerate",)),
    "fabric": ("from lightning.fabric import Fabric; Fabric(accelerator='cpu', devices=1)", ("lightning",)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, action="append", help="MLP widths of the training step (default 512 and 8)")
    # Fabric's first use alone takes ~3.5 s per interpreter: 3 rounds (+1 warm-up) and
    # 12 s of per-call measuring keep the whole benchmark under a minute with all three installed
    parser.add_argument("--process-rounds", type=int, default=3, help="fresh interpreters per library for first use")
    harness.add_common_args(parser, rounds=7, budget=12.0)
    args = parser.parse_args()
    harness.setup_threads(args.threads)
    have = installed()
    missing = [name for name, ok in have.items() if not ok]
    if missing:
        print(f"not installed, not measured: {', '.join(missing)} (pip install 'accel-abstraction[bench]')")
    all_cases = [c for width in (args.width or [512, 8]) for c in cases(have, width)]
    # the per-width cases repeat the non-step ones: keep the first of each name
    unique = list({c.name: c for c in reversed(all_cases)}.values())[::-1]
    results = harness.compare_calls(unique, args.rounds, args.budget, args.seed)
    for name, ok in have.items():
        if ok:
            code, packages = FIRST_USE[name]
            results.append(
                harness.compare_processes(f"{name}: first use", "import torch", code, args.process_rounds, packages=packages)
            )
    harness.print_results("alternatives, each against the direct torch call", results, args.threads)
    if args.json:
        harness.write_json(args.json, "alternatives", results, args.threads, {"not_installed": missing})


if __name__ == "__main__":
    main()
