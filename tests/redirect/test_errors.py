"""What the backend cannot serve fails clearly, naming the CUDA API, the call site and the backend."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch
from accel_cpu.backend import CpuBackend

from accel_abstraction.errors import CapabilityError
from accel_abstraction.features import Capabilities
from accel_abstraction.redirect import RedirectCapabilityError, redirect_cuda


def test_api_without_equivalent_raises_capability_error_naming_it() -> None:
    with redirect_cuda() as r:
        with pytest.raises(CapabilityError) as info:
            torch.cuda.ipc_collect()
    err = info.value
    assert isinstance(err, RedirectCapabilityError)
    assert err.api == "torch.cuda.ipc_collect" and err.backend == "cpu"
    assert err.site.endswith(f"test_errors.py:{info.tb.tb_lineno}")
    assert "torch.cuda.ipc_collect" in str(err) and "'cpu'" in str(err)
    assert [s.status for s in r.sites() if s.api == err.api] == ["failed"]


def test_streams_on_a_backend_without_them() -> None:
    with redirect_cuda():
        with pytest.raises(RedirectCapabilityError, match=r"torch\.cuda\.Stream .*'cpu'.*streams"):
            torch.cuda.Stream()
        assert not isinstance(object(), torch.cuda.Stream)


class NoMemoryStats(CpuBackend):
    """A backend that keeps no memory statistics."""

    # The redirect treats the backend's own package as internal; this test module is user code.
    __module__ = CpuBackend.__module__

    def capabilities(self) -> Capabilities:
        return replace(super().capabilities(), memory_stats=False)

    def empty_cache(self) -> None:
        self.require("memory_stats")


def test_memory_stats_fail_unless_allowed_missing() -> None:
    backend = NoMemoryStats()
    with redirect_cuda(backend) as r:
        with pytest.raises(RedirectCapabilityError, match=r"torch\.cuda\.max_memory_allocated.*--allow-missing"):
            torch.cuda.max_memory_allocated()
        torch.cuda.empty_cache()  # no cache to empty: a no-op, whatever the options
    assert {s.api: s.status for s in r.sites()}["torch.cuda.empty_cache"] == "no-op"
    with redirect_cuda(backend, allow_missing=True) as r:
        assert torch.cuda.max_memory_allocated() == 0
        assert torch.cuda.memory_stats() == {}
        assert torch.cuda.reset_peak_memory_stats() is None
        with pytest.raises(RedirectCapabilityError):  # no neutral (free, total): dividing by 0 would follow
            torch.cuda.mem_get_info()
    statuses = {s.api: s.status for s in r.sites()}
    assert statuses["torch.cuda.max_memory_allocated"] == "missing"


def test_torch_itself_still_sees_the_real_cuda() -> None:
    torch_file = os.path.join(os.path.dirname(torch.__file__), "_fake_internal.py")
    code = compile("result = torch.cuda.is_available(), torch.cuda.device_count()", torch_file, "exec")
    scope = {"torch": torch}
    with redirect_cuda():
        exec(code, scope)
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1  # user code: the backend's truth
    assert scope["result"] == (False, 0)  # torch's own code: the real CPU-only build
