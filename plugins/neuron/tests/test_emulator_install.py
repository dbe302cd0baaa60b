"""install(): explicit, idempotent, refuses a foreign PrivateUse1 owner; the torch.neuron surface."""

from __future__ import annotations

import torch

NEURON_NAMES = """is_available device_count current_device set_device device is_initialized init get_device_name
get_device_properties synchronize memory_allocated max_memory_allocated memory_reserved max_memory_reserved
memory_stats memory_summary reset_peak_memory_stats reset_accumulated_memory_stats empty_cache manual_seed
manual_seed_all seed seed_all initial_seed get_rng_state set_rng_state Stream Event current_stream
default_stream set_stream stream wait_stream is_bf16_supported get_amp_supported_dtype""".split()


def test_import_installs_nothing_and_install_logs_once(fresh_process):
    assert fresh_process["installed_after_import"] is False
    assert fresh_process["torch_neuron_after_import"] is False
    assert fresh_process["privateuse1_after_import"] == "privateuseone"
    assert fresh_process["installed"] is True
    assert fresh_process["log"] == ["neuron device emulated on the CPU (2 devices)"]


def test_install_refuses_when_another_backend_owns_privateuse1(run_python):
    proc = run_python(
        """
        import torch
        torch.utils.rename_privateuse1_backend("foo")
        from accel_neuron.emulator import EmulatorError, install, is_installed
        try:
            install()
        except EmulatorError as e:
            assert isinstance(e, RuntimeError)
            print("refused:", e)
        assert not is_installed()
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "refused:" in proc.stdout and "'foo'" in proc.stdout


def test_install_refuses_a_torch_release_its_private_hooks_were_not_checked_against(run_python):
    proc = run_python(
        """
        import torch
        torch.__version__ = "2.15.0+cpu"  # as if a newer torch were installed
        from accel_neuron.emulator import EmulatorError, install, is_installed
        try:
            install()
        except EmulatorError as e:
            print("refused:", e)
        assert not is_installed()
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "refused: the neuron emulator relies on private PyTorch hooks checked against torch 2.13" in proc.stdout
    assert "torch 2.15.0+cpu is installed" in proc.stdout


def test_unsupported_torch_names_the_versions():
    from accel_neuron.emulator.install import unsupported_torch

    assert unsupported_torch("2.13.0+cpu") is None
    assert "torch 2.14.1 is installed" in unsupported_torch("2.14.1")


def test_device_module_exposes_native_names(neuron_emulator):
    missing = [n for n in NEURON_NAMES if not hasattr(torch.neuron, n)]
    assert missing == []
    assert not hasattr(torch.neuron, "get_rng_state_all")
    assert torch.neuron._is_emulated is True
    assert torch.neuron.is_available() and torch.neuron.device_count() == 2  # the default count
    assert torch.neuron.is_bf16_supported() is True
    assert torch.neuron.get_amp_supported_dtype() == [torch.float32, torch.float16, torch.bfloat16]
    props = torch.neuron.get_device_properties(0)
    assert isinstance(props.name, str) and props.total_memory > 0
    assert torch.accelerator.current_accelerator() == torch.device("neuron")


def test_streams_and_events_are_synchronous_noops(neuron_emulator):
    s = torch.neuron.Stream()
    with torch.neuron.stream(s):
        assert torch.neuron.current_stream() is s
        x = torch.ones(3, device="neuron") * 2
        e = torch.neuron.Event(enable_timing=True)
        e.record()
    assert torch.neuron.current_stream() is torch.neuron.default_stream()
    torch.neuron.wait_stream(s)
    torch.neuron.synchronize()
    assert e.query() and s.query()
    assert x.cpu().tolist() == [2.0, 2.0, 2.0]
