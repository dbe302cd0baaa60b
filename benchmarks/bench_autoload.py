"""What accel-neuron's ``torch.backends`` autoload adds to ``import torch`` when neuron is not configured.

Run: ``python benchmarks/bench_autoload.py [--json benchmarks/results.json]``.
Target (read off the table, not asserted): <= 1.01x of ``import torch``.

PyTorch calls the entry point at the end of every ``import torch`` (in every process that
imports torch, configured or not). Each round is one fresh interpreter that times ``import
torch`` with autoloading off (``TORCH_DEVICE_BACKEND_AUTOLOAD=0``) and then what PyTorch
does for our entry point (import ``accel_neuron.autoload``, call ``autoload()``); the
scan of installed entry points PyTorch does anyway is not counted. Cases: no
configuration file at all; a ``pyproject.toml`` that mentions accel but selects no neuron
(read and parsed); ``ACCEL_BACKEND=cpu`` (decided from the environment, no file read).
Method: :func:`harness.compare_processes`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import harness  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
_OURS = "import os; os.chdir({cwd!r}); from accel_neuron.autoload import autoload; autoload()"


def cases(rounds: int, empty: Path) -> list[harness.Result]:
    off = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    table = [
        ("autoload, nothing configured, no pyproject.toml", empty, {}),
        ("autoload, pyproject.toml mentioning accel (parsed), no neuron", REPO, {}),
        ("autoload, ACCEL_BACKEND=cpu", REPO, {"ACCEL_BACKEND": "cpu"}),
    ]
    return [
        harness.compare_processes(
            name, "import torch", _OURS.format(cwd=str(cwd)), rounds, env={**off, **env}, packages=harness.ACCEL_PACKAGES
        )
        for name, cwd, env in table
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--process-rounds", type=int, default=7, help="fresh interpreters per case")
    harness.add_common_args(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as empty:
        results = cases(args.process_rounds, Path(empty))
    harness.print_results("accel-neuron torch.backends autoload on import torch", results, args.threads)
    if args.json:
        harness.write_json(args.json, "autoload", results, args.threads)


if __name__ == "__main__":
    main()
