"""Each patch: the bug on stock torch with the emulated neuron device, fixed with the overlay;
and CPU-only behaviour identical with and without the patches.

Every test compares two fresh interpreters (see ``conftest.py`` and ``scenarios.py``).
"""

from __future__ import annotations

import pytest

from .conftest import scenario_names

pytestmark = pytest.mark.slow

#: patch number -> the scenario that shows it. Every patch of the series must be here.
PATCH_SCENARIOS = {
    "0001": "grad_scaler",
    "0002": "checkpoint_dropout",
    "0003": "sharded_grad_scaler",
    "0004": "save_on_cpu_pinned",
    "0005": "dynamo_rng",
    "0006": "ddp_bf16_hook",
    "0007": "register_backend_default_devices",
    "0008": "device_mesh_default_group",
    "0009": "memory_snapshot",
    "0010": "profiler_memory_timeline",
}

CUDA_DISABLED_WARNING = "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling."


def test_every_patch_has_a_scenario(series) -> None:
    numbers = {patch.name.split("-", 1)[0] for patch in series.patches}
    assert numbers == set(PATCH_SCENARIOS)
    assert set(PATCH_SCENARIOS.values()) <= set(scenario_names())


def test_0001_grad_scaler_defaults_to_the_current_accelerator(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "grad_scaler")
    # Stock: GradScaler() picks cuda, warns and disables itself: no loss scaling at all.
    assert stock == {
        "enabled": False,
        "device": "cuda",
        "warnings": [CUDA_DISABLED_WARNING],
        "scaled_loss": 2.0,
    }
    assert patched == {"enabled": True, "device": "neuron", "warnings": [], "scaled_loss": 2.0 * 2.0**16}


def test_0002_checkpoint_recomputes_the_same_dropout_masks(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "checkpoint_dropout")
    # The real torch.neuron has no CUDA-private `_initialized` flag. Stock checkpoint reads only
    # that flag, so it never stashes the neuron RNG state: recomputation draws new dropout
    # masks and the gradients are wrong. (The emulator's module mirrors the flag, so stock works
    # with it as installed.)
    assert stock["module_without_cuda_flag"] == {"reentrant": False, "non_reentrant": False}
    assert patched["module_without_cuda_flag"] == {"reentrant": True, "non_reentrant": True}
    assert patched["module_as_installed"] == {"reentrant": True, "non_reentrant": True}
    assert patched["gradient_sum"] == stock["gradient_sum"]  # the plain run is untouched


def test_0003_sharded_grad_scaler_defaults_to_the_current_accelerator(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "sharded_grad_scaler")
    assert stock == {"enabled": False, "device": "cuda", "warnings": [CUDA_DISABLED_WARNING]}
    assert patched == {"enabled": True, "device": "neuron", "warnings": []}


def test_0004_save_on_cpu_asks_the_current_accelerator_about_pinning(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "save_on_cpu_pinned")
    # Stock: pinning is decided by torch.cuda.is_available(): False, so unpinned synchronous copies.
    assert stock["consulted"] == ["cuda"]
    assert "gradient_sum" in stock["outcome"]
    assert patched["consulted"] == ["neuron"]
    # The emulator has no pinned host allocator (a limit of a pure-Python PrivateUse1 backend), so
    # the pinned path now reaches torch's own error for that instead of silently not pinning.
    outcome = patched["outcome"]
    if "error" in outcome:
        assert outcome["error"] == "NotImplementedError"
        assert "getPinnedMemoryAllocator" in outcome["message"]
    else:
        assert outcome == stock["outcome"]


def test_0005_dynamo_restores_the_accelerator_rng_state(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "dynamo_rng")
    assert stock == {"preserve_rng_state": False, "checkpoint_params": False, "preserve_global_state": False}
    assert patched == {"preserve_rng_state": True, "checkpoint_params": True, "preserve_global_state": True}


def test_0006_ddp_trains_through_bf16_compress_hook_on_the_accelerator(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "ddp_bf16_hook")
    assert stock["ddp_device_type"] == patched["ddp_device_type"] == "neuron"
    assert stock["hook_registered"]["error"] == "TypeError"
    assert "required CUDA 11+ and NCCL 2.10+" in stock["hook_registered"]["message"]
    assert patched["hook_registered"] is True
    assert patched["gradient_went_through_bf16"] is True


def test_0007_register_backend_default_devices_include_the_accelerator(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "register_backend_default_devices")
    assert stock["capability"] == stock["registered_config_devices"] == ["cpu", "cuda"]
    assert "neuron" not in stock["unknown_config_devices"]
    assert patched["capability"] == ["cpu", "cuda", "neuron"]
    assert patched["registered_config_devices"] == ["cpu", "cuda", "neuron"]
    assert patched["unknown_config_devices"] == ["cpu", "cuda", "neuron", "xpu"]
    assert all("`neuron`" in w for w in patched["warnings"]) and len(patched["warnings"]) == 2


def test_0008_device_mesh_does_not_reuse_the_gloo_world_for_the_accelerator(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "device_mesh_default_group")
    # Stock: the gloo WORLD group is reused for a neuron mesh (CUDA would get a new group).
    assert stock["reuses_default_group"] is True
    assert patched["reuses_default_group"] is False


def test_0009_memory_snapshot_uses_the_accelerator_module(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "memory_snapshot")
    assert stock["error"] == "AttributeError" and "_cuda_memorySnapshot" in stock["message"]
    if "error" in patched:  # the emulator has no torch.neuron.memory._snapshot
        assert patched["error"] == "RuntimeError"
        assert "'neuron'" in patched["message"] and "cuda" not in patched["message"]
    else:
        assert patched["keys"]


def test_0010_memory_timeline_reports_the_accelerator_peak(scenarios) -> None:
    stock, patched = scenarios.observe("neuron", "profiler_memory_timeline")
    # 256 MiB were allocated on neuron; stock reads CUDA's counters.
    assert stock["title"] == "Max memory allocated: 0.00 GiB  Max memory reserved: 0.00 GiB"
    assert patched["title"] == "Max memory allocated: 0.25 GiB  Max memory reserved: 0.25 GiB"


@pytest.mark.parametrize("name", scenario_names())
def test_cpu_only_behaviour_is_unchanged(scenarios, name: str) -> None:
    stock, patched = scenarios.observe("cpu", name)
    assert patched == stock
