"""A CUDA-coupled training script is scanned, ported, and the port runs on cpu and on emulated neuron."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from accel_abstraction.porting import port_source, scan_source

pytest.importorskip("torch", reason="runs the ported script on the backends (the notorch nox leg has no torch)")

SCRIPT = textwrap.dedent(
    '''
    """Train a small regression MLP the way CUDA-first tutorials do."""
    import argparse

    import torch
    import torch.nn as nn
    from torch.cuda.amp import GradScaler, autocast


    def main() -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="cuda", help="where to train (e.g. cuda)")
        parser.add_argument("--steps", type=int, default=30)
        args = parser.parse_args()

        torch.manual_seed(0)
        torch.cuda.manual_seed_all(0)
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print("devices:", torch.cuda.device_count(), "bf16:", torch.cuda.is_bf16_supported())

        model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = GradScaler()
        x = torch.randn(256, 16, device=device)
        y = x.sum(dim=1, keepdim=True).cuda(non_blocking=True)
        data = torch.utils.data.TensorDataset(x.cpu(), y.cpu())
        loader = torch.utils.data.DataLoader(data, batch_size=64, pin_memory=True)
        assert next(model.parameters()).is_cuda == torch.cuda.is_available()

        first = last = None
        for step in range(args.steps):
            for xb, yb in loader:
                xb, yb = xb.to("cuda"), yb.to(args.device)
                opt.zero_grad()
                with autocast(dtype=torch.bfloat16):
                    loss = nn.functional.mse_loss(model(xb).float(), yb)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            torch.cuda.synchronize()
            first = first if first is not None else loss.item()
            last = loss.item()
        state = torch.cuda.get_rng_state()
        torch.cuda.set_rng_state(state)
        print(f"first={first:.4f} last={last:.4f}")


    if __name__ == "__main__":
        main()
    '''
).lstrip()


def _run(path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, str(path), "--steps", "6"], capture_output=True, text=True, env=full_env, timeout=300
    )


BACKENDS = {
    "cpu": {"ACCEL_BACKEND": "cpu"},
    "neuron": {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"},
}


@pytest.mark.slow
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_scan_port_and_run(tmp_path: Path, backend: str) -> None:
    findings = scan_source(SCRIPT, "train.py").findings
    codes = sorted({f.code for f in findings})
    assert codes == [
        "ACC101", "ACC111", "ACC112", "ACC121", "ACC122", "ACC124", "ACC131", "ACC133",
        "ACC141", "ACC161", "ACC182", "ACC183", "ACC191",
    ]
    assert all(f.portable for f in findings)

    result = port_source(SCRIPT, "train.py")
    assert result.error is None and result.manual == []
    assert "torch.cuda" not in result.output  # uses rewritten, the now-unused import dropped
    assert port_source(result.output).output == result.output

    ported = tmp_path / "train.py"
    ported.write_text(result.output)

    run = _run(ported, **BACKENDS[backend])
    assert run.returncode == 0, run.stderr[-3000:]
    first, last = (float(part.split("=")[1]) for part in run.stdout.strip().splitlines()[-1].split())
    assert last < first


DDP_SCRIPT = textwrap.dedent(
    '''
    """A torchrun-style DDP script: device_ids=[rank], bf16 chosen by a capability check, CUDA events."""
    import sys

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main(rank: int = 0) -> None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend, init_method=sys.argv[1], world_size=1, rank=rank)
        torch.manual_seed(0)
        torch.cuda.manual_seed(0)
        bf16 = False
        if torch.cuda.is_available():
            major, _ = torch.cuda.get_device_capability()
            bf16 = major >= 8
            start = torch.cuda.Event(enable_timing=True)
            start.record()
        print("capability checked:", bf16)
        device = torch.device("cuda", rank) if torch.cuda.is_available() else torch.device("cpu")
        model = DDP(torch.nn.Linear(8, 1).to(device), device_ids=[rank], output_device=rank)
        opt = torch.optim.AdamW(model.parameters(), lr=0.1)
        x = torch.randn(64, 8, device=device)
        y = x.sum(dim=1, keepdim=True)
        losses = []
        for _ in range(20):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        on_gpu = str(next(model.parameters()).device).startswith("cuda")
        print(f"first={losses[0]:.6f} last={losses[-1]:.6f} on_gpu={on_gpu}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    '''
).lstrip()


@pytest.mark.slow
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_ported_ddp_script_runs_where_the_original_stops(tmp_path: Path, backend: str) -> None:
    result = port_source(DDP_SCRIPT, "ddp.py")
    assert result.error is None, result.error
    assert 'if accel.device_type() == "cuda":' in result.output  # the capability block stays CUDA-only
    assert "device_ids=accel.ddp_device_ids(rank), output_device=accel.ddp_output_device(rank)" in result.output
    original, ported = tmp_path / "original.py", tmp_path / "ported.py"
    original.write_text(DDP_SCRIPT)
    ported.write_text(result.output)
    env = {**os.environ, **BACKENDS[backend]}

    def run(path: Path) -> subprocess.CompletedProcess[str]:
        store = f"file://{tmp_path}/{path.stem}-store"
        return subprocess.run([sys.executable, str(path), store], capture_output=True, text=True, env=env, timeout=300)

    before = run(original)
    assert before.returncode != 0 and "device_ids" in before.stderr  # DDP refuses CUDA ids for a CPU module
    after = run(ported)
    assert after.returncode == 0, after.stderr[-3000:]
    lines = after.stdout.strip().splitlines()
    assert lines[0] == "capability checked: False"  # not reached on the emulated device either
    first, last, on_gpu = (part.split("=")[1] for part in lines[-1].split())
    assert float(last) < float(first)
    assert on_gpu == str(backend == "neuron")  # the model is on the accelerator: the device test says so
