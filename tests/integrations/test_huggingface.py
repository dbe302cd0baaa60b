"""An unchanged ``transformers.Trainer`` script on the emulated neuron device, by configuration alone.

The script (``hf_trainer_script.py``) has no accel code. ``import torch`` runs accel-neuron's
``torch.backends`` autoload, which selects the configured backend and points accelerate and
``Trainer`` at its device (:mod:`accel_abstraction.integrations.huggingface`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers", reason="transformers is not installed (pip install 'accel-abstraction[hf]')")
pytest.importorskip("accelerate", reason="accelerate is not installed (pip install 'accel-abstraction[hf]')")

from .conftest import HERE, NEURON_ENV, free_port, last_json, run_python  # noqa: E402

pytestmark = pytest.mark.slow
SCRIPT = str(HERE / "hf_trainer_script.py")


def _train(tmp_path: Path, env: dict[str, str], *flags: str) -> dict[str, Any]:
    out = tmp_path / "out"
    return last_json(run_python([SCRIPT, str(out), *flags], env, cwd=tmp_path))


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _train(tmp_path_factory.mktemp("cpu"), {"ACCEL_BACKEND": "cpu"})


def test_trainer_trains_on_neuron_with_the_cpu_losses_bitwise(cpu_run: dict[str, Any], tmp_path: Path) -> None:
    neuron = _train(tmp_path, NEURON_ENV)
    assert cpu_run["device"] == "cpu"
    assert neuron["device"] == "neuron:0" and neuron["args_device"].startswith("neuron")
    assert neuron["tied"], "GPT-2's tied embedding came apart on the way to the device"
    assert len(neuron["losses"]) == 4
    assert neuron["losses"] == cpu_run["losses"]
    # resumed from the half-way checkpoint (model, optimizer, scheduler loaded onto the device)
    assert neuron["resumed_losses"] == cpu_run["losses"]


def test_resumed_trainer_restores_the_device_rng_state(tmp_path: Path) -> None:
    """With dropout on the device, a run resumed from its half-way checkpoint logs the losses of the
    uninterrupted run only if the checkpoint restored the device generator (Trainer saves CUDA's, not
    neuron's; without accel's glue the resumed half draws other dropout masks)."""
    neuron = _train(tmp_path, NEURON_ENV, "--dropout", "0.1")
    assert neuron["device"] == "neuron:0"
    assert len(neuron["losses"]) == 4
    assert neuron["resumed_losses"] == neuron["losses"]
    assert "rng_state_neuron.pth" in neuron["checkpoint_files"] and "rng_state.pth" in neuron["checkpoint_files"]


def test_trainer_bf16_runs_on_neuron(cpu_run: dict[str, Any], tmp_path: Path) -> None:
    bf16 = _train(tmp_path, NEURON_ENV, "--bf16")
    assert bf16["device"] == "neuron:0"
    fp32 = [float.fromhex(x) for x in cpu_run["losses"]]
    got = [float.fromhex(x) for x in bf16["losses"]]
    assert got != fp32, "bf16=True computed in float32: autocast did not reach the device"
    assert got == pytest.approx(fp32, rel=2e-2)


def test_unconfigured_trainer_stays_on_cpu_and_bf16_check_is_transformers_own(tmp_path: Path) -> None:
    code = (
        "import json, os, torch\n"
        "from transformers import training_args as ta\n"
        "print(json.dumps({'var': os.environ.get('ACCELERATE_TORCH_DEVICE'), "
        "'bf16': ta.is_torch_bf16_gpu_available(), 'neuron': hasattr(torch, 'neuron')}))\n"
    )
    assert last_json(run_python(["-c", code], {}, cwd=tmp_path)) == {"var": None, "bf16": False, "neuron": False}


def test_accelerator_uses_neuron_and_saves_and_loads_state(tmp_path: Path) -> None:
    code = (
        "import json, torch\n"
        "from accelerate import Accelerator\n"
        "acc = Accelerator(mixed_precision='bf16')\n"
        "model = torch.nn.Linear(4, 4)\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "model, opt = acc.prepare(model, opt)\n"
        "with acc.autocast():\n"
        "    y = model(torch.ones(2, 4, device=acc.device))\n"
        "    inner = torch.nn.functional.linear(torch.ones(2, 4, device=acc.device), model.weight)\n"
        "acc.backward(y.float().square().mean()); opt.step()\n"
        "acc.save_state('state')\n"
        "before = model.weight.detach().cpu().clone()\n"
        "with torch.no_grad(): model.weight.zero_()\n"
        "acc.load_state('state')\n"
        "print(json.dumps({'device': str(acc.device), 'param': str(model.weight.device), 'dtype': str(inner.dtype),\n"
        "                  'restored': bool(torch.equal(model.weight.detach().cpu(), before))}))\n"
    )
    got = last_json(run_python(["-c", code], NEURON_ENV, cwd=tmp_path))
    assert got == {"device": "neuron:0", "param": "neuron:0", "dtype": "torch.bfloat16", "restored": True}


def test_trainer_under_accel_run_with_two_emulated_devices(tmp_path: Path) -> None:
    """``accel run``: Trainer sees two CUDA devices and wraps the model in nn.DataParallel, whose
    replicas run one after another on neuron:0; the losses are those of one device taking the
    whole batch (a CPU run with twice the per-device batch), up to the order of summation."""
    (tmp_path / "cpu").mkdir()
    cpu = _train(tmp_path / "cpu", {"ACCEL_BACKEND": "cpu"}, "--batch", "8")
    report = tmp_path / "report.json"
    env = {**NEURON_ENV, "ACCEL_NEURON_EMULATE_DEVICES": "2"}
    run = ["-m", "accel_abstraction.run", "--report", "none", "-o", str(report), SCRIPT, str(tmp_path / "out")]
    got = last_json(run_python(run, env, cwd=tmp_path))
    assert got["device"] == "neuron:0" and got["n_gpu"] == 2
    expected = [float.fromhex(x) for x in cpu["losses"]]
    assert [float.fromhex(x) for x in got["losses"]] == pytest.approx(expected, rel=1e-6)
    assert [float.fromhex(x) for x in got["resumed_losses"]] == pytest.approx(expected, rel=1e-6)
    sites = json.loads(report.read_text())["sites"]
    assert {(s["api"], s["status"]) for s in sites if "DataParallel" in s["api"]} == {
        ("torch.nn.DataParallel", "one device")
    }


ACCELERATE_SCRIPT = str(HERE / "accelerate_script.py")


def _ranks(proc: Any) -> list[dict[str, Any]]:
    """Every JSON object the ranks printed (two ranks share the pipe: lines may interleave)."""
    assert proc.returncode == 0, proc.stderr[-6000:]
    rows, text, decoder = [], proc.stdout, json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            row, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:  # not JSON (Trainer prints its log dicts with repr)
            start = text.find("{", start + 1)
            continue
        rows.append(row)
        start = text.find("{", end)
    return sorted(rows, key=lambda row: row.get("rank", 0))


def test_accelerate_script_trains_the_optimizer_it_made_before_prepare(tmp_path: Path) -> None:
    """An optimizer made on the CPU module steps the parameters ``prepare`` moved to the device (on a
    PrivateUse1 device ``.to()`` makes new Parameter objects): the CPU's losses and weights, bitwise."""
    cpu = last_json(run_python([ACCELERATE_SCRIPT], {"ACCEL_BACKEND": "cpu"}, cwd=tmp_path))
    neuron = last_json(run_python([ACCELERATE_SCRIPT], NEURON_ENV, cwd=tmp_path))
    assert (neuron["device"], neuron["processes"]) == ("neuron:0", 1)
    assert neuron["losses"] == cpu["losses"] and len(set(cpu["losses"])) == 4  # it trained
    assert neuron["weight"] == cpu["weight"]


def test_accelerate_launch_runs_two_processes_on_two_emulated_devices(tmp_path: Path) -> None:
    """``accelerate launch --multi_gpu --num_processes 2``: accelerate's multi-process path on the emulated
    device (MULTI_NEURON, the ``neuron`` collective library, rank r on ``neuron:r``), with the losses and
    weights of the same two ranks on the CPU (gloo), bit for bit."""
    launch = [
        "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_ip", "127.0.0.1",
        "--main_process_port", free_port(), ACCELERATE_SCRIPT,
    ]  # fmt: skip
    neuron = _ranks(run_python(launch, NEURON_ENV, cwd=tmp_path))
    torchrun = [
        "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
        "--master-port", free_port(), ACCELERATE_SCRIPT,
    ]  # fmt: skip
    cpu = _ranks(run_python(torchrun, {"ACCEL_BACKEND": "cpu", "ACCELERATE_USE_CPU": "true"}, cwd=tmp_path))
    assert [(r["rank"], r["processes"], r["device"]) for r in neuron] == [(0, 2, "neuron:0"), (1, 2, "neuron:1")]
    assert {(r["distributed_type"], r["process_group"]) for r in neuron} == {("MULTI_NEURON", "neuron")}
    assert {(r["distributed_type"], r["process_group"]) for r in cpu} == {("MULTI_CPU", "gloo")}
    assert [r["losses"] for r in neuron] == [r["losses"] for r in cpu]
    assert [r["weight"] for r in neuron] == [r["weight"] for r in cpu]
    assert neuron[0]["weight"] == neuron[1]["weight"]  # DDP kept the replicas equal


def test_trainer_under_accelerate_launch_trains_on_two_emulated_devices(tmp_path: Path) -> None:
    """The unchanged Trainer script under ``accelerate launch --multi_gpu --num_processes 2``: DDP, rank r
    on ``neuron:r``, the same logged losses on both ranks, a resumed run with the same losses (each
    rank's device RNG state in its own ``rng_state_neuron_<rank>.pth``)."""
    launch = [
        "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_ip", "127.0.0.1",
        "--main_process_port", free_port(), SCRIPT, str(tmp_path / "out"), "--dropout", "0.1",
    ]  # fmt: skip
    ranks = sorted(_ranks(run_python(launch, NEURON_ENV, cwd=tmp_path)), key=lambda r: r["device"])
    assert [(r["device"], r["n_gpu"]) for r in ranks] == [("neuron:0", 1), ("neuron:1", 1)]
    assert ranks[0]["losses"] == ranks[1]["losses"] and len(ranks[0]["losses"]) == 4
    assert all(r["resumed_losses"] == r["losses"] for r in ranks)
    assert {"rng_state_neuron_0.pth", "rng_state_neuron_1.pth"} <= set(ranks[0]["checkpoint_files"])
