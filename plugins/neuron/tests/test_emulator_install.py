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


def test_a_newer_untested_release_runs_when_its_probes_pass_with_one_warning(run_python):
    proc = run_python(
        """
        import warnings
        import torch
        torch.__version__ = "2.99.0+cpu"  # as if a release newer than the tested ones were installed
        from accel_neuron.emulator import install, is_installed
        from accel_neuron.emulator.compat import UntestedTorchWarning
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            install()
            install()
            x = torch.ones(3, device="neuron") * 2
        assert is_installed() and x.cpu().tolist() == [2.0, 2.0, 2.0]
        for w in caught:
            print(w.category.__name__, "|", w.message)
        """
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("UntestedTorchWarning | torch 2.99.0+cpu is newer than the newest release")
    assert "(2.13.0, 2.14.1, 2.15.0)" in lines[0]


def test_a_missing_private_hook_refuses_with_the_probe_that_failed(run_python):
    proc = run_python(
        """
        import os
        import torch
        del torch._C._construct_storage_from_data_pointer  # as if a release had dropped it
        os.environ["ACCEL_NEURON_EMULATE"] = "1"
        import accel_abstraction as accel
        from accel_abstraction.errors import BackendUnavailableError
        from accel_neuron.emulator import EmulatorError, install, is_installed
        for attempt in (lambda: accel.use("neuron"), install):
            try:
                attempt()
            except BackendUnavailableError as e:
                print(type(e).__name__, isinstance(e, EmulatorError), "|", e)
        assert not is_installed()
        """
    )
    assert proc.returncode == 0, proc.stderr
    selected, installed = proc.stdout.splitlines()
    probe = "the neuron emulator's probe 'storage from a data pointer' failed on torch"
    assert selected.startswith("BackendUnavailableError False | backend 'neuron' is not available")
    assert probe in selected and "missing torch._C._construct_storage_from_data_pointer" in selected
    assert "To fix: install a torch release the emulator was tested on (2.13.0, 2.14.1, 2.15.0)" in selected
    assert installed.startswith("EmulatorProbeError True | backend 'neuron' is not available") and probe in installed


def test_a_failing_self_test_refuses_for_the_rest_of_the_process(run_python):
    proc = run_python(
        """
        import os
        import torch
        import accel_abstraction.module_apply as module_apply
        module_apply.enable = lambda owner: None  # as if tied weights untied again on this release
        os.environ["ACCEL_NEURON_EMULATE"] = "1"
        import accel_abstraction as accel
        from accel_abstraction.errors import BackendUnavailableError
        from accel_neuron.emulator import install, is_installed
        from accel_neuron.backend import NeuronBackend
        for attempt in (install, lambda: accel.use("neuron")):
            try:
                attempt()
            except BackendUnavailableError as e:
                print(type(e).__name__, "|", e.probe if hasattr(e, "probe") else "-", "|", e)
        assert not is_installed()
        print("available:", NeuronBackend().availability().available)
        """
    )
    assert proc.returncode == 0, proc.stderr
    first, second, available = proc.stdout.splitlines()
    assert first.startswith("EmulatorProbeError | self-test: tied and lazy .to() |")
    assert "a tied weight became two parameters after .to('neuron')" in first
    assert second.startswith("BackendUnavailableError | - |") and "'self-test: tied and lazy .to()'" in second
    assert available == "available: False"


def test_release_status_and_probes_on_the_installed_torch():
    from accel_neuron.emulator import compat

    assert compat.release_status("2.13.0+cpu") == "tested"
    assert compat.release_status("2.15.0") == "tested"
    assert compat.release_status("2.16.0") == "newer"
    assert compat.release_status("3.0.0a0") == "newer"
    assert compat.release_status("2.12.1") == "older"
    assert [r for r in compat.hook_probes() if not r.ok] == []
    assert len(compat.hook_probes()) == len(compat.HOOKS)


def test_info_rows_show_the_release_and_the_probes(neuron_selected):
    from accel_neuron.emulator import compat

    from accel_abstraction import info

    rows = dict(info.collect()["environment"])
    assert rows["torch release"] == torch.__version__
    tested = compat.release_status() == "tested"
    assert rows["torch tested with the emulator"] == "yes" if tested else rows["torch tested with the emulator"].startswith("no")
    assert rows["emulator hook probes"] == f"{len(compat.HOOKS)}/{len(compat.HOOKS)} pass"
    assert rows["emulator self-test"] == f"{len(compat.SELF_TEST)}/{len(compat.SELF_TEST)} pass"


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
