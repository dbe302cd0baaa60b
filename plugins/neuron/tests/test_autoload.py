"""accel-neuron's ``torch.backends`` entry point: ``import torch`` sets up the configured device, and only it.

Every case runs ``import torch`` in a fresh interpreter with autoloading on (PyTorch's
default), from a folder holding the ``pyproject.toml`` under test, with only the given
ACCEL_* variables.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from accel_neuron import autoload

_PROBE = (
    "import json, sys, warnings\n"
    "warnings.simplefilter('always')\n"
    "with warnings.catch_warnings(record=True) as caught:\n"
    "    import torch\n"
    "out = {'neuron': hasattr(torch, 'neuron'), 'selected': 'accel_abstraction.runtime' in sys.modules,\n"
    "       'pydantic': 'pydantic' in sys.modules,\n"
    "       'warnings': [str(w.message) for w in caught if 'accel-neuron' in str(w.message)]}\n"
    "if out['neuron']:\n"
    "    x = torch.ones(3, device='neuron:1') * 2\n"
    "    out['tensor'] = [str(x.device), x.sum().item()]\n"
    "print(json.dumps(out))\n"
)


def _import_torch(tmp_path: Path, env: dict[str, str], pyproject: str | None = None) -> dict:
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_", "TORCH_DEVICE_BACKEND"))}
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=tmp_path, env=full, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_entry_point_is_registered_for_torch() -> None:
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="torch.backends")}
    assert eps.get("accel_neuron") == "accel_neuron.autoload:autoload"


def test_unconfigured_import_torch_sets_up_nothing_and_loads_no_settings_model(tmp_path: Path) -> None:
    got = _import_torch(tmp_path, {})
    assert got == {"neuron": False, "selected": False, "pydantic": False, "warnings": []}


def test_another_backend_named_in_the_environment_decides_without_reading_files(tmp_path: Path) -> None:
    # a broken pyproject.toml is not even read when ACCEL_BACKEND already says "not neuron"
    got = _import_torch(tmp_path, {"ACCEL_BACKEND": "cpu", "ACCEL_NEURON_EMULATE": "1"}, "[tool.accel\nbroken")
    assert got == {"neuron": False, "selected": False, "pydantic": False, "warnings": []}


def test_emulated_neuron_from_the_environment_is_ready_after_import_torch(tmp_path: Path) -> None:
    got = _import_torch(tmp_path, {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"})
    assert got["neuron"] and got["selected"] and got["warnings"] == []
    assert got["tensor"] == ["neuron:1", 6.0]


def test_emulated_neuron_from_pyproject_alone(tmp_path: Path) -> None:
    got = _import_torch(tmp_path, {}, '[tool.accel]\nbackend = "trainium"\n\n[tool.accel.neuron]\nemulate = true\n')
    assert got["neuron"] and got["tensor"] == ["neuron:1", 6.0]


@pytest.mark.parametrize(
    ("env", "pyproject", "says"),
    [
        ({"ACCEL_NEURON_EMULATE": "1"}, "[tool.accel\nnot toml", "invalid TOML"),
        ({"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "maybe"}, None, "ACCEL_NEURON_EMULATE"),
        ({"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1", "ACCEL_NEURON_EMULATE_DEVICES": "0"}, None,
         "ACCEL_NEURON_EMULATE_DEVICES"),
    ],
)
def test_a_broken_configuration_never_breaks_import_torch(
    tmp_path: Path, env: dict[str, str], pyproject: str | None, says: str
) -> None:
    got = _import_torch(tmp_path, env, pyproject)
    assert got["neuron"] is False
    assert len(got["warnings"]) == 1 and says in got["warnings"][0], got["warnings"]
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in got["warnings"][0]


def test_torch_switch_turns_it_off(tmp_path: Path) -> None:
    env = {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    assert _import_torch(tmp_path, env)["neuron"] is False


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"ACCEL_BACKEND": "cuda"}, False),
        ({"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "0"}, False),
        ({"ACCEL_BACKEND": "neuron"}, False),  # native: torch_neuronx autoloads itself
        ({"ACCEL_BACKEND": "TRN", "ACCEL_NEURON_EMULATE": "yes"}, True),
        ({"ACCEL_NEURON_EMULATE": "1"}, True),  # backend "auto" picks the configured emulation
    ],
)
def test_configured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], expected: bool) -> None:
    for key in list(os.environ):
        if key.startswith("ACCEL_"):
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    assert autoload.configured() is expected


@pytest.mark.slow
@pytest.mark.parametrize(
    ("code", "prints"),
    [
        # the README's own shape: accel first; torch is first imported inside accel's import of runtime
        ("import accel_abstraction as accel; print(accel.device())", "neuron"),
        ("import torch, accel_abstraction as accel; print(accel.device(), torch.ones(1, device='neuron:1').device)",
         "neuron neuron:1"),
        ("import accel_abstraction as accel, torch; print(torch.ones(1, device='neuron').device, accel.device_type())",
         "neuron:0 neuron"),
        # a submodule first: torch's import meets it half-imported; the first accel call sets the device up
        ("import accel_abstraction.interface, torch, accel_abstraction as accel; print(accel.device_count())", "2"),
        # ... and plain torch code after it, with no accel call: the device itself exists at `import torch`
        ("import accel_abstraction.interface, torch; print(torch.ones(1, device='neuron:1').device)", "neuron:1"),
        ("from accel_abstraction import module_apply; import accel_abstraction as accel; print(accel.device())",
         "neuron"),
        ("from accel_abstraction.cli import main; main(['run', '--report', 'none', 'script.py'])", "neuron:0"),
    ],
    ids=[
        "accel_first", "torch_first", "accel_then_torch", "submodule_first", "submodule_then_torch_only",
        "module_apply_first", "accel_run",
    ],  # fmt: skip
)
def test_importing_in_any_order_with_emulated_neuron_warns_nothing_even_under_W_error(
    tmp_path: Path, code: str, prints: str
) -> None:
    (tmp_path / "script.py").write_text("import torch\nprint(torch.ones(1).cuda().device)\n")  # for accel run
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_", "TORCH_DEVICE_BACKEND"))}
    env.update(ACCEL_BACKEND="neuron", ACCEL_NEURON_EMULATE="1")
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Warning" not in proc.stderr and "not set up" not in proc.stderr, proc.stderr[-4000:]
    assert prints in proc.stdout, proc.stdout


_INSTALL_IMPORTS = """
import ast, importlib.util, json, sys
import torch
before = set(sys.modules)
from accel_neuron.emulator.install import install
install()
def imports_torch(name):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    tree = ast.parse(open(spec.origin, encoding="utf-8").read())
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(n == "torch" or n.startswith("torch.") for n in names):
            return True
    return False
ours = sorted(m for m in set(sys.modules) - before if m.partition(".")[0] in ("accel_abstraction", "accel_neuron"))
print(json.dumps([m for m in ours if imports_torch(m)]))
"""


@pytest.mark.slow
def test_install_needs_names_every_module_install_imports_that_imports_torch(tmp_path: Path) -> None:
    """The modules ``install()`` imports that import torch at their top are covered by ``INSTALL_NEEDS``.

    A module missing there could be the one half-imported when torch's autoload runs, and
    installing the device then would meet it (an import cycle at ``import torch``).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_", "TORCH_DEVICE_BACKEND"))}
    env.update(ACCEL_BACKEND="neuron", ACCEL_NEURON_EMULATE="1", TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    proc = subprocess.run(
        [sys.executable, "-c", _INSTALL_IMPORTS], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    torch_importers = json.loads(proc.stdout.splitlines()[-1])
    assert "accel_abstraction.module_apply" in torch_importers  # the check sees what it is meant to
    uncovered = [m for m in torch_importers if not autoload._needed_by_install(m)]
    assert not uncovered, f"add these to accel_neuron.autoload.INSTALL_NEEDS: {uncovered}"
