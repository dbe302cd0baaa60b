"""The same training script on cpu and on the emulated neuron device, only ACCEL_BACKEND changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).parent / "scripts" / "train_models.py"
BACKENDS = {
    "cpu": {"ACCEL_BACKEND": "cpu"},
    "neuron": {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"},
}

pytestmark = pytest.mark.slow


def run(backend: str, out: Path, *args: str) -> dict:  # type: ignore[type-arg]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    env.update(BACKENDS[backend])
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    saved = torch.load(out)
    assert saved["device_type"] == backend
    return saved["results"]  # type: ignore[no-any-return]


def _relative_l2(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float(
        torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected).clamp_min(1e-12)
    )


def test_fp32_training_is_bitwise_equal(tmp_path: Path) -> None:
    cpu = run("cpu", tmp_path / "cpu.pt")
    neuron = run("neuron", tmp_path / "neuron.pt")
    for model in ("mlp", "block"):
        for name, value in cpu[model].items():
            assert torch.equal(value, neuron[model][name]), f"{model}.{name} differs between cpu and neuron"


def test_bf16_autocast_training_matches_cpu_autocast(tmp_path: Path) -> None:
    cpu = run("cpu", tmp_path / "cpu.pt", "--amp")
    neuron = run("neuron", tmp_path / "neuron.pt", "--amp")
    fp32 = run("cpu", tmp_path / "fp32.pt")
    for model in ("mlp", "block"):
        for name, value in cpu[model].items():
            # Compared as a whole tensor, not element by element: an AdamW step moves each weight by
            # about lr * sign(grad), so a one-ulp bf16 difference in a near-zero gradient moves that
            # element by up to 2 * lr per step whatever the device. The bound is under what bf16
            # autocast itself moves the mlp's weights from the fp32 run (relative L2 0.04-0.08), so
            # a neuron leg that skipped autocast fails it; measured neuron vs cpu: 0 or <= 0.011.
            assert _relative_l2(neuron[model][name], value) <= 2e-2, f"{model}.{name}"
        # and autocast really ran in bf16: the result is not the fp32 one
        assert any(not torch.equal(cpu[model][k], fp32[model][k]) for k in fp32[model])


def _differing(got: dict, expected: dict) -> list[str]:  # type: ignore[type-arg]
    """The weights (model.name) of `got` that are not bitwise those of `expected`, with where they part."""
    out = []
    for model, weights in expected.items():
        for name, value in weights.items():
            other = got[model][name]
            if not torch.equal(other, value):
                at = (other != value).flatten().nonzero().flatten()
                out.append(
                    f"{model}.{name}: {at.numel()} of {value.numel()} elements, {int(at.min())}..{int(at.max())}"
                )
    return out


def test_bf16_autocast_training_is_the_same_in_every_process(tmp_path: Path) -> None:
    # Issue 35: emulated bf16 autocast + AdamW runs once differed from each other across processes
    # (2 of 5, in elements 4096-8191 of the mlp's 8192-element first weight, after one step). Each
    # process computes with the CPU's kernels on the same inputs, so every emulated run must be
    # bitwise the others and the cpu run, unless the CPU kernels themselves differ across processes
    # on this machine (checked with three cpu runs: then the emulator cannot be told apart from them).
    runs = {b: [run(b, tmp_path / f"{b}{i}.pt", "--amp", "--steps", "2") for i in range(3)] for b in BACKENDS}
    cpu_spread = [d for other in runs["cpu"][1:] if (d := _differing(other, runs["cpu"][0]))]
    if cpu_spread:
        pytest.skip(
            f"the CPU kernels give other bf16 results in another process on this machine: {cpu_spread}"
        )
    for i, neuron in enumerate(runs["neuron"]):
        assert not _differing(neuron, runs["cpu"][0]), (
            f"neuron run {i} differs from cpu: {_differing(neuron, runs['cpu'][0])}"
        )
