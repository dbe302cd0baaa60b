"""Plugin loading through real entry points: isolation, allow-lists, duplicates, `accel info`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import cuda_unavailable_reason, make_plugin_dist, run_cli

pytestmark = pytest.mark.slow

GOOD = """
from accel_abstraction import hookimpl, BackendSpec
from accel_abstraction.interface import Backend
from accel_abstraction.features import Availability

class Meta(Backend):
    name = "metadev"
    device_type = "meta"
    def availability(self):
        return Availability.yes()

@hookimpl
def accel_register_backends(register):
    register(BackendSpec("metadev", Meta, priority=-1))
"""


def info_json(result_stdout: str) -> dict:  # type: ignore[type-arg]
    return json.loads(result_stdout)


def test_plugin_that_raises_on_import_is_isolated(tmp_path: Path) -> None:
    make_plugin_dist(tmp_path, "broken", "raise ImportError('needs libfoo.so')\n", dist="accel-broken")
    make_plugin_dist(tmp_path, "good", GOOD, dist="accel-good")
    result = run_cli("info", "--json", pythonpath=tmp_path, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = info_json(result.stdout)
    status = {p["name"]: p for p in report["plugins"]}
    assert status["broken"]["status"] == "failed"
    assert "ImportError: needs libfoo.so" in status["broken"]["error"]
    assert "needs libfoo.so" in status["broken"]["traceback"] and "Traceback" in status["broken"]["traceback"]
    assert status["good"]["status"] == "loaded" and status["good"]["backends"] == ["metadev"]
    assert status["cpu"]["status"] == "loaded"
    assert "plugin 'broken' (accel-broken) was not loaded" in result.stderr  # the warning names it
    human = run_cli("info", "--tracebacks", pythonpath=tmp_path, cwd=tmp_path)
    assert "Traceback of plugin 'broken'" in human.stdout and "needs libfoo.so" in human.stdout


def test_plugin_whose_registration_raises_is_isolated(tmp_path: Path) -> None:
    code = "from accel_abstraction import hookimpl\n@hookimpl\ndef accel_register_backends(register):\n    raise KeyError('oops')\n"
    make_plugin_dist(tmp_path, "badreg", code)
    report = info_json(run_cli("info", "--json", pythonpath=tmp_path, cwd=tmp_path).stdout)
    status = {p["name"]: p for p in report["plugins"]}
    assert status["badreg"]["status"] == "failed"
    assert "accel_register_backends raised KeyError" in status["badreg"]["error"]
    assert report["selected"]["name"] == "cpu"


def test_plugin_whose_factory_raises(tmp_path: Path) -> None:
    code = GOOD.replace("class Meta(Backend):", "class Meta(Backend):\n    def __init__(self, s):\n        raise OSError('no /dev/meta0')")
    make_plugin_dist(tmp_path, "badfactory", code)
    result = run_cli("info", "--json", pythonpath=tmp_path, cwd=tmp_path, env={"ACCEL_BACKEND": "metadev"})
    report = info_json(result.stdout)
    assert report["selected"] is None
    assert "factory of backend 'metadev' from fake-badfactory (plugin 'badfactory') raised OSError: no /dev/meta0" in report["selection_error"]


def test_duplicate_backend_names_both_distributions(tmp_path: Path) -> None:
    # The second plugin claiming a name fails alone; the first keeps it, every other backend works.
    make_plugin_dist(tmp_path, "one", GOOD, dist="accel-one")
    make_plugin_dist(tmp_path, "two", GOOD, dist="accel-two")
    result = run_cli("info", "--json", pythonpath=tmp_path, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = info_json(result.stdout)
    status = {p["name"]: p for p in report["plugins"]}
    assert status["one"]["status"] == "loaded" and status["one"]["backends"] == ["metadev"]
    assert status["two"]["status"] == "failed"
    err = status["two"]["error"]
    assert err.startswith("backend name 'metadev' is registered twice")
    assert "accel-one (plugin 'one')" in err and "plugin 'two' (accel-two)" in err
    assert "plugin 'two' (accel-two) was not loaded: backend name 'metadev'" in result.stderr
    assert report["selected"]["name"] == "cpu"


def test_allow_list_loads_only_what_it_names(tmp_path: Path) -> None:
    make_plugin_dist(tmp_path, "good", GOOD)
    report = info_json(run_cli("info", "--json", pythonpath=tmp_path, cwd=tmp_path, env={"ACCEL_PLUGINS": "cpu,accel-cuda"}).stdout)
    status = {p["name"]: p["status"] for p in report["plugins"]}
    assert status == {"cpu": "loaded", "cuda": "loaded", "good": "skipped", "neuron": "skipped"}
    assert [b["name"] for b in report["backends"]] == ["cuda", "cpu"]


def test_disable_autoload_loads_only_named(tmp_path: Path) -> None:
    env = {"ACCEL_DISABLE_PLUGIN_AUTOLOAD": "1", "ACCEL_PLUGINS": "cpu"}
    report = info_json(run_cli("info", "--json", cwd=tmp_path, env=env).stdout)
    assert {p["name"]: p["status"] for p in report["plugins"]}["neuron"] == "skipped"
    assert [b["name"] for b in report["backends"]] == ["cpu"]
    nothing = run_cli("info", "--json", cwd=tmp_path, env={"ACCEL_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "no registered backend is available" in info_json(nothing.stdout)["selection_error"]


def test_allow_list_naming_a_missing_plugin(tmp_path: Path) -> None:
    result = run_cli("info", cwd=tmp_path, env={"ACCEL_PLUGINS": "cpu,nueron"})
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "accel: error: ACCEL_PLUGINS names 'nueron', which is not installed; installed plugins: cpu, cuda, neuron. "
        "Did you mean 'neuron'?"
    )


def test_info_on_a_fresh_install(tmp_path: Path) -> None:
    result = run_cli("info", "--json", cwd=tmp_path)
    report = info_json(result.stdout)
    assert report["selected"]["name"] == "cpu" and report["selected"]["source"] == "default"
    backends = {b["name"]: b for b in report["backends"]}
    assert backends["cuda"]["available"] is False and cuda_unavailable_reason() in backends["cuda"]["reason"]
    assert backends["neuron"]["available"] is False and "torch_neuronx" in backends["neuron"]["reason"]
    human = run_cli("info", cwd=tmp_path).stdout
    assert "cpu (selected)" in human and "requested 'auto' by default" in human


def test_info_on_emulated_neuron(tmp_path: Path) -> None:
    env = {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}
    report = info_json(run_cli("info", "--json", cwd=tmp_path, env=env).stdout)
    assert report["selected"]["name"] == "neuron"
    assert report["capabilities"]["extras"] == {"emulated": True}
    assert ["neuron mode", "emulated on the CPU"] in report["environment"]
    assert report["amp_dtype"] == "bfloat16" and report["dist_backend"] == "neuron"
