"""Unmodified CUDA-style scripts (single process, DataLoader workers, mp.spawn DDP, torchrun DDP) under ``accel run``.

Each runs unchanged under ``accel run`` on the cpu backend and on the emulated neuron
device, and must print the losses of its hand-ported twin (``scripts/*_ported.py``, which
uses ``accel.*``) run on the same backend. The pair runs concurrently. Multi-process
runs use 127.0.0.1 and a port of their own, and a timeout.

The twins are written by a person, not generated with ``accel port`` at test time: they are
an oracle independent of both the porter and the redirect (which read the same CUDA -> accel
tables, so a mistake in a table would pass a generated twin), and ``gpt_cuda.py`` has sites
no tool ports (CUDA events, NVTX ranges, device properties).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from accel_abstraction.testing.ports import free_port
from accel_abstraction.testing.timeouts import scaled

from .conftest import losses

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).resolve().parent / "scripts"
CPU = {"ACCEL_BACKEND": "cpu"}
NEURON = {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}
TIMEOUT = 240  # seconds on an idle machine; stretched by load (scaled)


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    env.update(extra)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")  # torchrun
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(args, cwd=SCRIPTS, env=_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        limit = scaled(TIMEOUT)
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{proc.args} did not finish in {limit:.0f}s:\n{err[-3000:]}")
    return proc.returncode, out, err


def run_pair(redirected: list[str], ported: list[str], env: dict[str, str], report: Path) -> tuple[str, dict]:
    """Run ``accel run <redirected>`` and ``python <ported>`` concurrently; check both succeed with the same losses."""
    accel = [sys.executable, "-m", "accel_abstraction.cli", "run", "-o", str(report), *redirected]
    a, b = _start(accel, env), _start([sys.executable, *ported], env)
    (rc_a, out_a, err_a), (rc_b, out_b, err_b) = _finish(a), _finish(b)
    assert rc_b == 0, err_b[-3000:]
    assert rc_a == 0, err_a[-3000:]
    assert losses(out_b), out_b
    assert losses(out_a) == losses(out_b)
    return err_a, json.loads(report.read_text())


def _apis(data: dict) -> dict[str, str]:
    return {s["api"]: s["status"] for s in data["sites"]}


@pytest.mark.parametrize("env", [CPU, NEURON], ids=["cpu", "neuron"])
def test_gpt_loop_with_pinned_batches_memory_logging_and_compile(env: dict[str, str], tmp_path: Path) -> None:
    flags = ["--steps", "4", "--compile", "--compile-backend", "aot_eager"] if env is CPU else ["--steps", "3"]
    err, data = run_pair(["gpt_cuda.py", *flags], ["gpt_ported.py", *flags], env, tmp_path / "r.json")
    apis = _apis(data)
    assert apis["Tensor.pin_memory()"] == "no-op"  # neither backend pins memory: served as the tensor itself
    for api in ("torch.cuda.max_memory_allocated", "torch.cuda.reset_peak_memory_stats", "torch.cuda.get_device_properties",
                "torch.cuda.get_device_capability", "torch.cuda.Event", "torch.cuda.nvtx.range_push",
                "torch.backends.cuda.matmul.allow_tf32", "torch.backends.cuda.enable_flash_sdp"):  # fmt: skip
        assert apis[api] == "redirected", api
    assert "CUDA calls redirected" in err


def test_dataloader_workers_started_with_spawn(tmp_path: Path) -> None:
    args = ["--workers", "2", "--steps", "3"]
    _, data = run_pair(["loader_cuda.py", *args], ["loader_ported.py", *args], CPU, tmp_path / "r.json")
    apis = _apis(data)
    assert apis["DataLoader(pin_memory=True)"] == "no-op"
    assert apis["Tensor.cuda()"] == "redirected"


@pytest.mark.parametrize("env", [CPU, NEURON], ids=["cpu", "neuron"])
def test_mp_spawn_ddp_tutorial(env: dict[str, str], tmp_path: Path) -> None:
    port = "29611" if env is CPU else "29621"
    _, data = run_pair(
        ["ddp_spawn_cuda.py", "--world-size", "2", "--port", port],
        ["ddp_spawn_ported.py", "--world-size", "2", "--port", str(int(port) + 1)],
        env, tmp_path / "r.json",
    )  # fmt: skip
    sites = [s for s in data["sites"] if s["api"] == "torch.cuda.set_device"]
    assert sites and sites[0]["count"] == 2  # both spawned ranks were redirected and reported
    assert _apis(data)["torch.distributed.init_process_group(backend='nccl')"] == "redirected"


def test_torchrun_ddp(tmp_path: Path) -> None:
    """``accel run torchrun ...`` on the CUDA script; the twin under ``accel run -m torch.distributed.run``.

    The ported twin uses ``accel.*`` only: under ``accel run`` nothing of it is redirected
    (its report is empty) and it computes what it computes without.
    """
    launch = ["--nproc-per-node", "2", "--master-addr", "127.0.0.1"]
    cuda_port, twin_port = str(free_port()), str(free_port())
    assert shutil.which("torchrun", path=os.path.dirname(sys.executable)), "torchrun is installed with torch"
    twin_report = tmp_path / "twin.json"
    twin = ["-m", "accel_abstraction.cli", "run", "--report", "none", "-o", str(twin_report),
            "-m", "torch.distributed.run", *launch, "--master-port", twin_port, "ddp_torchrun_ported.py"]  # fmt: skip
    _, data = run_pair(["torchrun", *launch, "--master-port", cuda_port, "ddp_torchrun_cuda.py"], twin, CPU, tmp_path / "r.json")
    apis = _apis(data)
    assert apis["torch.load(map_location=cuda)"] == "redirected"
    assert apis["torch.distributed.destroy_process_group()"] == "redirected"  # waited for both ranks first
    assert sum(s["count"] for s in data["sites"] if s["api"] == "torch.cuda.set_device") == 2  # both workers
    assert json.loads(twin_report.read_text())["sites"] == []
