"""Lightning Fabric and Trainer with accelerator="accel": the selected device by configuration alone.

``lightning_script.py`` is a plain Lightning script whose only accel line is the import that
registers the accelerator; each case runs it in a fresh interpreter with only ACCEL_* set.
Multi-process cases talk over 127.0.0.1 and are killed with their ranks on timeout.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("lightning", reason="lightning is not installed (pip install 'accel-abstraction[lightning]')")

from .conftest import HERE, NEURON_ENV, free_port, last_json, run_python  # noqa: E402

SCRIPT = str(HERE / "lightning_script.py")
CPU_ENV = {"ACCEL_BACKEND": "cpu"}


def _run(tmp_path: Any, env: dict[str, str], *args: str) -> dict[str, Any]:
    env = {**env, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": free_port()}
    return last_json(run_python([SCRIPT, *args], env, cwd=tmp_path, timeout=300))


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_import_registers_accel_and_each_backend_without_selecting(tmp_path: Any) -> None:
    code = (
        "import json, sys\n"
        "import accel_abstraction.integrations.lightning as L\n"
        "from lightning.fabric.accelerators import ACCELERATOR_REGISTRY as F\n"
        "from lightning.pytorch.accelerators import AcceleratorRegistry as T\n"
        "import accel_abstraction.runtime as runtime\n"
        "print(json.dumps({'fabric': sorted(set(F) & {'accel', 'neuron', 'cpu'}), 'trainer': sorted(set(T) & {'accel', 'neuron'}),\n"
        "                  'selected': runtime._selection is not None, 'again': L.register(),\n"
        "                  'cpu_is_lightnings': type(F.get('cpu')).__module__.startswith('lightning')}))\n"
    )
    got = last_json(run_python(["-c", code], NEURON_ENV | {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, cwd=tmp_path))
    assert got == {"fabric": ["accel", "cpu", "neuron"], "trainer": ["accel", "neuron"], "selected": False,
                   "again": [], "cpu_is_lightnings": True}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fabric", "trainer"])
def test_fp32_losses_on_neuron_are_the_cpus_bitwise(tmp_path: Any, kind: str) -> None:
    cpu = _run(tmp_path, CPU_ENV, kind)
    neuron = _run(tmp_path, NEURON_ENV, kind)
    assert cpu["device"] == "cpu" and neuron["device"] == "neuron:0"
    assert neuron["losses"] == cpu["losses"] and len(cpu["losses"]) == 3
    assert neuron["strategy"].endswith("SingleDeviceStrategy")


@pytest.mark.slow
def test_fabric_bf16_mixed_computes_in_bf16_on_the_device(tmp_path: Any) -> None:
    got = _run(tmp_path, NEURON_ENV, "fabric", "--precision", "bf16-mixed")
    assert got["device"] == "neuron:0" and got["dtype"] == "torch.bfloat16"


@pytest.mark.slow
def test_fabric_ddp_over_two_emulated_devices_matches_two_cpu_ranks(tmp_path: Any) -> None:
    neuron = _run(tmp_path, NEURON_ENV, "fabric", "--devices", "2")
    cpu = _run(tmp_path, CPU_ENV, "fabric", "--devices", "2")
    assert neuron["world"] == 2 and neuron["strategy"] == "AccelDDPStrategy" and neuron["device"] == "neuron:0"
    assert neuron["losses"] == cpu["losses"]


@pytest.mark.slow
def test_trainer_ddp_runs_on_two_emulated_devices(tmp_path: Any) -> None:
    got = _run(tmp_path, NEURON_ENV, "trainer", "--devices", "2")
    assert got["world"] == 2 and got["device"] == "neuron:0" and got["strategy"] == "AccelDDPStrategy"
    assert len(got["losses"]) == 2  # the DistributedSampler gave rank 0 two of the three batches


@pytest.mark.slow  # starts an interpreter (docs/testing.md)
def test_lightnings_default_group_settles_and_is_destroyed_at_interpreter_exit(tmp_path: Any) -> None:
    # Fabric and the Trainer leave their group to interpreter exit, where a gloo rank tearing down while its
    # peer is in its last collective can abort the peer ("terminate called without an active exception",
    # this file's two-rank Fabric case: 1 of 3 runs before). accel's strategies settle, then destroy it.
    code = (
        "import json, warnings, torch.distributed as dist\n"
        "from accel_abstraction.integrations import lightning as accel_lightning\n"
        "accel_lightning._settle_at_exit()  # no group yet: nothing to do\n"
        "dist.init_process_group('gloo', init_method='tcp://127.0.0.1:" + free_port() + "', rank=0, world_size=1)\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('error')  # the settle must succeed, not warn and destroy anyway\n"
        "    accel_lightning._settle_at_exit()\n"
        "print(json.dumps({'initialized': dist.is_initialized()}))\n"
    )
    assert last_json(run_python(["-c", code], CPU_ENV, cwd=tmp_path)) == {"initialized": False}
