"""The rest of the CUDA surface real scripts touch is served by the selected backend (cpu here), and reported."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

import pytest
import torch

import accel_abstraction as accel
from accel_abstraction.redirect import redirect_cuda
from accel_abstraction.redirect.children import ENV, propagate


def _status(r: redirect_cuda) -> dict[str, str]:
    return {s.api: s.status for s in r.sites()}


def test_pinned_batches_are_served_without_pinned_memory() -> None:
    x = torch.arange(6.0)
    with redirect_cuda() as r:
        y = x.pin_memory().to("cuda", non_blocking=True)  # nanoGPT's get_batch
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # not torch's "no accelerator is found" warning
            loader = torch.utils.data.DataLoader(list(range(4)), batch_size=2, pin_memory=True)
            batches = list(loader)
    assert torch.equal(y, x) and y.device.type == "cpu"
    assert [b.tolist() for b in batches] == [[0, 1], [2, 3]]
    assert _status(r)["Tensor.pin_memory()"] == "no-op"
    assert _status(r)["DataLoader(pin_memory=True)"] == "no-op"


def test_is_cuda_answers_for_the_backend_in_user_code_only() -> None:
    internal = compile("result = t.is_cuda", os.path.join(os.path.dirname(torch.__file__), "_fake.py"), "exec")
    scope = {"t": torch.ones(1)}
    with redirect_cuda() as r:
        assert torch.ones(1, device="cuda").is_cuda
        exec(internal, scope)
    assert scope["result"] is False  # torch's own code sees the real attribute
    assert not torch.ones(1).is_cuda  # undone
    assert "Tensor.is_cuda" in _status(r)


def test_generator_on_cuda_is_a_backend_generator() -> None:
    with redirect_cuda() as r:
        g = torch.Generator(device="cuda")
        g.manual_seed(3)
        a = torch.randn(3, generator=g, device="cuda")
        assert isinstance(g, torch.Generator) and g.device.type == "cpu"
        assert isinstance(torch.Generator(), torch.Generator)
    assert torch.equal(a, torch.randn(3, generator=torch.Generator().manual_seed(3)))
    assert _status(r)['torch.Generator(device="cuda")'] == "redirected"


def test_nvtx_ranges_become_profiler_ranges() -> None:
    with redirect_cuda() as r, torch.profiler.profile() as prof:
        assert torch.cuda.nvtx.range_push("outer") == 0
        with torch.cuda.nvtx.range("inner {}", 1):
            torch.ones(2) + 1
        assert torch.cuda.nvtx.range_pop() == 0
        assert torch.cuda.nvtx.range_pop() == -1  # nothing open, as NVTX answers
        torch.cuda.nvtx.mark("here")
    names = {e.name for e in prof.events()}
    assert {"outer", "inner 1", "here"} <= names
    assert _status(r)["torch.cuda.nvtx.range_push"] == "redirected"


def test_tf32_and_attention_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(accel.backend(), "set_allow_tf32", calls.append)
    flash = torch.backends.cuda.flash_sdp_enabled()
    try:
        with redirect_cuda() as r:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cuda.enable_flash_sdp(False)
            assert not torch.backends.cuda.flash_sdp_enabled()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                with torch.backends.cuda.sdp_kernel(enable_math=True):
                    pass
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cuda.enable_flash_sdp(flash)
    assert calls == [True]
    assert {"torch.backends.cuda.matmul.allow_tf32", "torch.backends.cuda.enable_flash_sdp",
            "torch.backends.cuda.sdp_kernel"} <= set(_status(r))  # fmt: skip


def test_device_properties_and_capability() -> None:
    with redirect_cuda():
        props = torch.cuda.get_device_properties(0)
        major, minor = torch.cuda.get_device_capability()
    assert props.name == accel.device_name()
    assert props.total_memory == accel.mem_get_info()[1] > 0
    assert props.multi_processor_count == os.cpu_count()
    assert (major, minor) == (props.major, props.minor) == (8, 0)  # bf16 supported: the checks for >= 8 pick it


def test_positional_autocast_and_host_timed_events() -> None:
    with redirect_cuda() as r:
        with torch.cuda.amp.autocast(True):
            assert torch.is_autocast_enabled("cpu")
        with torch.cuda.amp.autocast(False):
            assert not torch.is_autocast_enabled("cpu")
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        time.sleep(0.02)
        end.record()
        end.synchronize()
        assert 15 <= start.elapsed_time(end) < 2000
        assert start.query() and isinstance(start, torch.cuda.Event)
    assert _status(r)["torch.cuda.Event"] == "redirected"


def test_memory_statistics_on_cpu_through_torch_cuda() -> None:
    with redirect_cuda() as r:
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.max_memory_allocated()
        x = torch.ones(32 << 20, dtype=torch.uint8)
        peak = torch.cuda.max_memory_allocated()
        del x
        torch.cuda.empty_cache()  # the CPU keeps no cache: nothing to do
        assert torch.cuda.memory_stats()["allocated_bytes.all.peak"] >= peak
    assert peak - base >= 30 << 20
    assert accel.max_memory_allocated() >= peak
    assert set(_status(r).values()) == {"redirected"}


def test_a_python_child_started_during_the_run_is_redirected(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code = "import torch; print(torch.cuda.is_available(), torch.zeros(1, device='cuda:0').device)"
    with propagate("cpu", False) as sites_dir:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert os.listdir(sites_dir)  # the child wrote its sites
    assert out.stdout.split() == ["True", "cpu"]
    assert ENV not in os.environ
