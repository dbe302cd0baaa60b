"""`accel run` runs an unmodified CUDA training script on other backends, learning the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import CPU_SCRIPT, CUDA_SCRIPT, losses, marked_sites, run

pytestmark = pytest.mark.slow

ACCEL = ["-m", "accel_abstraction.cli"]


@pytest.fixture(scope="module")
def cpu_reference() -> list[str]:
    proc = run([str(CPU_SCRIPT)], {})
    assert proc.returncode == 0, proc.stderr
    return losses(proc.stdout)


def test_cuda_script_learns_the_cpu_numbers_and_reports_every_site(tmp_path: Path, cpu_reference: list[str]) -> None:
    report = tmp_path / "report.json"
    proc = run([*ACCEL, "run", "--allow-missing", "-o", str(report), str(CUDA_SCRIPT)], {"ACCEL_BACKEND": "cpu"})
    assert proc.returncode == 0, proc.stderr
    assert len(cpu_reference) == 6
    assert losses(proc.stdout) == cpu_reference  # exact: printed with repr()
    assert "cuda available: True, devices: 1" in proc.stdout  # the selected backend's truth
    assert "CUDA calls redirected to backend 'cpu'" in proc.stderr  # the table

    data = json.loads(report.read_text())
    assert data["backend"] == "cpu" and data["allow_missing"] is True
    sites = [s for s in data["sites"] if Path(s["file"]).resolve() == CUDA_SCRIPT]
    assert {(s["line"], s["api"]) for s in sites} == marked_sites(CUDA_SCRIPT)
    by_api = {s["api"]: s for s in sites}
    assert by_api["torch.cuda.synchronize"]["count"] == 5
    assert by_api["torch.cuda.max_memory_allocated"]["status"] == "redirected"  # the process's peak RSS
    peak = next(line for line in proc.stdout.splitlines() if line.startswith("peak memory:"))
    assert int(peak.split()[2]) > 10 << 20  # a real figure: torch alone holds more
    assert by_api["torch.cuda.synchronize"]["port_to"] == "accel.synchronize()"


def test_python_m_run_fails_clearly_on_an_api_without_equivalent(tmp_path: Path) -> None:
    script = tmp_path / "ipc.py"
    script.write_text("import torch\n\ntorch.cuda.ipc_collect()\n")
    proc = run(["-m", "accel_abstraction.run", "--report", "none", str(script)], {"ACCEL_BACKEND": "cpu"})
    assert proc.returncode == 2
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("accel: error:")]
    assert len(line) == 1, proc.stderr
    msg = line[0]
    assert "torch.cuda.ipc_collect" in msg and "ipc.py:3" in msg and "'cpu'" in msg
    assert "Traceback" not in proc.stderr


def _neuron_unavailable() -> str:
    env = {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}
    proc = run(["-c", "import accel_abstraction.runtime as r; r.use()"], env, timeout=120)
    if proc.returncode == 0:
        return ""
    return (proc.stderr.strip().splitlines() or ["unknown error"])[-1]


def test_cuda_script_runs_on_the_emulated_neuron_device(tmp_path: Path, cpu_reference: list[str]) -> None:
    why = _neuron_unavailable()
    if why:
        pytest.skip(f"the neuron backend is not available (ACCEL_NEURON_EMULATE=1): {why}")
    report = tmp_path / "report.json"
    env = {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}
    proc = run([*ACCEL, "run", "-o", str(report), str(CUDA_SCRIPT)], env)
    assert proc.returncode == 0, proc.stderr
    got = [float(line.rsplit(" ", 1)[1]) for line in losses(proc.stdout)]
    assert len(got) == len(cpu_reference)
    assert got[:5] == sorted(got[:5], reverse=True)  # it trains (its device RNG draws other data than the CPU's)
    data = json.loads(report.read_text())
    assert data["backend"] == "neuron"
    statuses = {s["api"]: s["status"] for s in data["sites"]}
    assert statuses["torch.cuda.max_memory_allocated"] == "redirected"  # the emulator keeps memory stats
    assert "peak memory: 0 bytes" not in proc.stdout
