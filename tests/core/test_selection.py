"""Selecting a backend: auto by priority, by name, errors, fallback, scoping, threads, hot-path binding."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import pytest
import torch

import accel_abstraction as accel
from accel_abstraction import hookimpl
from accel_abstraction.errors import BackendUnavailableError, PluginError, UnknownBackendError
from accel_abstraction.features import Availability
from accel_abstraction.interface import Backend
from accel_abstraction.plugins import register_plugin, reset

from .conftest import cuda_unavailable_reason, run_python


class _Meta(Backend):
    """A test backend on the meta device (no data: shapes only)."""

    name = "metadev"
    device_type = "meta"

    def availability(self) -> Availability:
        return Availability.yes()

    def device_count(self) -> int:
        return 1


class _Down(_Meta):
    name = "down"

    def availability(self) -> Availability:
        return Availability.no("the test device is switched off", hint="switch it on")


class _TestPlugin:
    def __init__(self) -> None:
        self.selected: list[str] = []

    @hookimpl
    def accel_register_backends(self, register):  # type: ignore[no-untyped-def]
        register(accel.BackendSpec("metadev", _Meta, priority=-5))
        register(accel.BackendSpec("down", _Down, priority=1000, aliases=("off",)))

    @hookimpl
    def accel_backend_selected(self, backend, settings):  # type: ignore[no-untyped-def]
        self.selected.append(backend.name)


@pytest.fixture
def test_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _TestPlugin:
    monkeypatch.chdir(tmp_path)
    reset()
    plugin = _TestPlugin()
    register_plugin(plugin, "test-plugin")
    return plugin


def test_auto_takes_the_highest_available_priority(test_plugin: _TestPlugin) -> None:
    # "down" has the highest priority but is unavailable; cpu (0) beats metadev (-5).
    assert accel.device_type() == "cpu"
    assert accel.backend().name == "cpu"
    assert test_plugin.selected == ["cpu"]


def test_named_backend_and_alias(test_plugin: _TestPlugin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_BACKEND", "metadev")
    assert accel.device() == torch.device("meta")
    with pytest.raises(BackendUnavailableError, match="switched off"):
        accel.use("off")


def test_unavailable_backend_error_names_source_reason_and_fix(test_plugin: _TestPlugin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_BACKEND", "down")
    with pytest.raises(BackendUnavailableError) as info:
        accel.device()
    msg = str(info.value)
    assert msg == (
        "backend 'down' is not available (asked for by environment variable ACCEL_BACKEND): "
        "the test device is switched off. To fix: switch it on"
    )


def test_unknown_backend_lists_known_and_suggests(test_plugin: _TestPlugin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_BACKEND", "metadv")
    with pytest.raises(UnknownBackendError) as info:
        accel.device()
    msg = str(info.value)
    assert "environment variable ACCEL_BACKEND" in msg
    assert "known backends: cpu, cuda, down, metadev, neuron, neuron-xla" in msg
    assert "Did you mean 'metadev'?" in msg


def test_fallback_warns_and_uses_the_named_backend(test_plugin: _TestPlugin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_BACKEND", "down")
    monkeypatch.setenv("ACCEL_FALLBACK", "metadev")
    with pytest.warns(RuntimeWarning, match=r"'down' is not available .*falling back to 'metadev'.*ACCEL_FALLBACK"):
        assert accel.device_type() == "meta"
    from accel_abstraction.runtime import selection

    assert selection().fell_back_from == "down"


def test_factory_that_raises_is_a_plugin_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    def broken(settings: object) -> Backend:
        raise RuntimeError("driver exploded")

    class Plugin:
        @hookimpl
        def accel_register_backends(self, register):  # type: ignore[no-untyped-def]
            register(accel.BackendSpec("broken", broken, priority=500))

    reset()
    register_plugin(Plugin(), "broken-plugin")
    with pytest.raises(PluginError, match=r"factory of backend 'broken'.*raised RuntimeError: driver exploded"):
        accel.use("broken")
    with pytest.warns(RuntimeWarning, match="skipped by backend='auto'"):
        assert accel.use().name == "cpu"


def test_using_scopes_and_restores(test_plugin: _TestPlugin) -> None:
    assert accel.device_type() == "cpu"
    with accel.using("metadev") as b:
        assert b.name == "metadev" and accel.device_type() == "meta"
        with accel.using("cpu"):
            assert accel.device_type() == "cpu"
        assert accel.device_type() == "meta"
    assert accel.device_type() == "cpu"
    assert test_plugin.selected == ["cpu", "metadev", "cpu", "metadev", "cpu"]


def test_selection_happens_once_across_threads(test_plugin: _TestPlugin) -> None:
    barrier = threading.Barrier(8)
    seen: list[Backend] = []

    def worker() -> None:
        barrier.wait()
        seen.append(accel.backend())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(seen) == 8 and len({id(b) for b in seen}) == 1
    assert test_plugin.selected == ["cpu"]


def test_public_calls_are_bound_to_the_backend_after_selection(test_plugin: _TestPlugin) -> None:
    stale_device = accel.device  # taken before selection: the lazy stub
    accel.use("cpu")
    # a plain function of the backend's hot bindings (torch.cpu.synchronize would ignore a bad device)
    assert accel.synchronize is not accel._STUBS["synchronize"]
    from accel_cpu.backend import _synchronize

    assert accel.synchronize.__code__ is _synchronize.__code__  # a copy bound to this backend's index_of
    with pytest.raises(accel.DeviceIndexError, match="device index 7 is out of range"):
        accel.synchronize(7)
    assert accel.device_count is torch.cpu.device_count
    assert accel.memory_allocated == accel.backend().memory_allocated
    assert stale_device() is accel.device()


def test_out_of_range_device_index_setting(test_plugin: _TestPlugin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_DEVICE_INDEX", "3")
    with pytest.raises(accel.DeviceIndexError, match=r"device index 3 is out of range for backend 'cpu', which has 1 device"):
        accel.use("cpu")


def test_forced_unavailable_backend_fails_with_one_line(tmp_path: Path) -> None:
    result = run_python("import accel_abstraction as accel; accel.device()", env={"ACCEL_BACKEND": "cuda"}, cwd=tmp_path)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("accel_abstraction.errors.BackendUnavailableError: backend 'cuda' is not available")
    assert "environment variable ACCEL_BACKEND" in last and cuda_unavailable_reason() in last


def test_bogus_backend_names_the_known_ones(tmp_path: Path) -> None:
    result = run_python("import accel_abstraction as accel; accel.device()", env={"ACCEL_BACKEND": "bogus"}, cwd=tmp_path)
    last = result.stderr.strip().splitlines()[-1]
    assert "unknown backend 'bogus'" in last and "known backends: cpu, cuda, neuron, neuron-xla" in last


def test_import_is_lazy(tmp_path: Path) -> None:
    code = """
        import sys, accel_abstraction
        heavy = [m for m in ("torch", "pydantic", "pydantic_settings", "pluggy", "importlib.metadata", "rich") if m in sys.modules]
        print(",".join(heavy))
    """
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_no_warning_on_a_clean_selection(test_plugin: _TestPlugin) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        accel.use("cpu")


def test_no_submodule_shadows_a_public_function(tmp_path: Path) -> None:
    # Importing package.sub sets package.sub: a module named like a public function would replace it.
    code = """
        import importlib, pkgutil, types, accel_abstraction as accel
        for info in pkgutil.walk_packages(accel.__path__, "accel_abstraction."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
        bad = [n for n in accel._STUBS if isinstance(getattr(accel, n), types.ModuleType)]
        print(",".join(bad))
    """
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
