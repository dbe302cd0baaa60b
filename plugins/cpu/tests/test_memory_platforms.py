"""CPU memory statistics where there is no ``/proc`` (macOS, Windows): psutil and ``resource``, Linux's semantics."""

from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest
from accel_cpu import memory

MiB = 2**20


class FakeProcess:
    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    def memory_info(self) -> Any:
        fields = {"rss": self.state["rss"]}
        if "peak_wset" in self.state:
            fields["peak_wset"] = self.state["peak_wset"]
        return types.SimpleNamespace(**fields)


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch) -> Callable[..., dict[str, Any]]:
    """No ``/proc``; a fake psutil (unless ``psutil=False``) and ``resource`` whose figures a test sets."""
    real_open = builtins.open

    def fake_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_open(path, *args, **kwargs)

    def setup(platform: str, psutil: bool = True, **state: Any) -> dict[str, Any]:
        monkeypatch.setattr(memory, "open", fake_open, raising=False)
        monkeypatch.setattr(memory, "_seen", 0)
        monkeypatch.setattr(memory, "_kernel_peak", True)
        monkeypatch.setattr(sys, "platform", platform)
        fake_psutil = types.ModuleType("psutil")
        fake_psutil.Process = lambda: FakeProcess(state)  # type: ignore[attr-defined]
        fake_psutil.virtual_memory = lambda: types.SimpleNamespace(available=3 * 1024 * MiB, total=8 * 1024 * MiB)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "psutil", fake_psutil if psutil else None)
        fake_resource = types.ModuleType("resource")
        fake_resource.RUSAGE_SELF = 0  # type: ignore[attr-defined]
        fake_resource.getrusage = lambda who: types.SimpleNamespace(ru_maxrss=state["maxrss"])  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "resource", fake_resource)
        return state

    return setup


def test_macos_reads_rss_from_psutil_and_the_peak_from_getrusage_in_bytes(no_proc: Callable[..., dict[str, Any]]) -> None:
    state = no_proc("darwin", rss=100 * MiB, maxrss=180 * MiB)
    assert memory.supported()
    assert memory.rss() == 100 * MiB
    assert memory.peak() == 180 * MiB and not memory.peak_is_sampled()  # the system's peak since start
    assert memory.stats()["allocated_bytes.all.peak"] == 180 * MiB
    memory.reset_peak()  # macOS cannot restart its peak: sampled from here on, as Linux with a read-only /proc
    assert memory.peak_is_sampled()
    assert memory.peak() == 100 * MiB
    state["rss"] = 140 * MiB
    memory.rss()
    state["rss"] = 120 * MiB
    assert memory.peak() == 140 * MiB  # never below an RSS reported since the reset
    assert memory.mem_info() == (3 * 1024 * MiB, 8 * 1024 * MiB)


def test_windows_reads_the_peak_working_set(no_proc: Callable[..., dict[str, Any]]) -> None:
    no_proc("win32", rss=50 * MiB, peak_wset=75 * MiB, maxrss=0)
    assert memory.rss() == 50 * MiB
    assert memory.peak() == 75 * MiB


def test_without_psutil_the_statistics_say_what_to_install(no_proc: Callable[..., dict[str, Any]]) -> None:
    no_proc("darwin", psutil=False, maxrss=1)
    assert not memory.supported()
    with pytest.raises(OSError, match="pip install psutil"):
        memory.mem_info()
