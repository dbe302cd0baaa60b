"""The neuron backend's own logic: native vs emulated mode, availability reasons, distributed prep, XLA mode.

Native mode is exercised for real through a stand-in ``torch_neuronx`` package whose import
does what AWS's does (make the ``neuron`` PrivateUse1 device and ``torch.neuron`` exist);
here it installs the CPU emulation, so the backend's native code path runs end to end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from accel_neuron.backend import SUPPORTED_TORCH, NeuronBackend
from accel_neuron.settings import NeuronSettings
from accel_neuron.xla_backend import NeuronXlaBackend

from accel_abstraction.errors import CapabilityError

STANDIN = '''
"""Stand-in for AWS TorchNeuron: importing it brings up the neuron device (here: emulated)."""
__version__ = "0.0-standin"
from accel_neuron import emulator
emulator.install()
'''


def standin(tmp_path: Path, extra: str = "") -> Path:
    pkg = tmp_path / "torch_neuronx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(STANDIN + textwrap.dedent(extra))
    return tmp_path


def run(code: str, env: dict[str, str], pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_", "NEURON_"))}
    full.update(env)
    if pythonpath is not None:
        full["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, capture_output=True, text=True, timeout=180)


def native() -> NeuronBackend:
    return NeuronBackend(None, NeuronSettings(emulate=False))


def test_native_without_torch_neuronx_says_what_to_do() -> None:
    avail = native().availability()
    assert not avail.available
    assert avail.reason == "torch_neuronx (AWS TorchNeuron) is not installed"
    assert "not on PyPI" in avail.hint and "ACCEL_NEURON_EMULATE=1" in avail.hint


def test_native_with_unsupported_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(standin(tmp_path)))
    monkeypatch.setattr(torch, "__version__", "2.11.0+cpu")
    avail = native().availability()
    assert not avail.available
    assert avail.reason == "TorchNeuron supports torch 2.13 and 2.14, but torch 2.11.0+cpu is installed"


#: TorchNeuron (the real product) supports these torch releases only; on another the native backend
#: is refused with that reason (test_native_with_unsupported_torch), so its runs cannot happen.
native_torch = pytest.mark.skipif(
    ".".join(torch.__version__.split("+")[0].split(".")[:2]) not in SUPPORTED_TORCH,
    reason=f"TorchNeuron supports torch {' and '.join(SUPPORTED_TORCH)} only, not {torch.__version__}",
)


@pytest.mark.slow
@native_torch
def test_native_mode_runs_through_torch_neuron(tmp_path: Path) -> None:
    code = """
        import json, torch, accel_abstraction as accel
        from accel_abstraction.info import collect
        x = torch.randn(64, 64, device=accel.device())
        with accel.autocast():
            y = x @ x
        accel.reset_peak_memory_stats()
        z = torch.empty(1 << 20, dtype=torch.uint8, device=accel.device())
        report = collect()
        print(json.dumps({"dtype": str(y.dtype), "peak": accel.max_memory_allocated(),
                          "scaler": accel.GradScaler().is_enabled(), "env": report["environment"],
                          "compile": accel.capabilities().compile_backend}))
    """
    result = run(code, {"ACCEL_BACKEND": "neuron"}, standin(tmp_path))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["dtype"] == "torch.bfloat16" and out["scaler"] is False
    assert out["peak"] >= 1 << 20
    assert ["neuron mode", "native (TorchNeuron)"] in out["env"]
    assert ["torch_neuronx", "0.0-standin"] in out["env"]
    assert out["compile"] == "neuron"


@pytest.mark.slow
@native_torch
def test_native_with_no_visible_core(tmp_path: Path) -> None:
    path = standin(tmp_path, "import torch\ntorch.neuron.device_count = lambda: 0\n")
    result = run("import accel_abstraction as accel; accel.device()", {"ACCEL_BACKEND": "neuron", "NEURON_RT_VISIBLE_CORES": "9"}, path)
    assert result.returncode != 0
    assert "no NeuronCore is visible to this process (NEURON_RT_VISIBLE_CORES='9')" in result.stderr.splitlines()[-1]


@pytest.mark.slow
def test_emulation_refused_when_privateuse1_is_taken() -> None:
    code = """
        import torch
        torch.utils.rename_privateuse1_backend("otherdev")
        import accel_abstraction as accel
        accel.device()
    """
    # the other backend takes the slot after `import torch`, as one that is not autoloaded does; with
    # autoloading on, accel-neuron's own autoload would have taken it first (test_autoload.py)
    env = {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    result = run(code, env)
    last = result.stderr.strip().splitlines()[-1]
    assert "PrivateUse1 slot, which the 'otherdev' backend already owns" in last


def test_emulation_is_explicit_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACCEL_NEURON_EMULATE", raising=False)
    assert NeuronBackend(None).emulated is False
    monkeypatch.setenv("ACCEL_NEURON_EMULATE", "1")
    assert NeuronBackend(None).emulated is True


def test_before_init_sets_visible_cores_natively_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEURON_RT_VISIBLE_CORES", raising=False)
    NeuronBackend(None, NeuronSettings(emulate=True)).before_init_process_group(3)
    assert "NEURON_RT_VISIBLE_CORES" not in os.environ
    native().before_init_process_group(3)
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "3"
    native().before_init_process_group(5)  # a value the user set wins
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "3"


def test_declarations() -> None:
    b = native()
    assert (b.dist_backend(), b.visible_devices_env()) == ("neuron", "NEURON_RT_VISIBLE_CORES")
    assert b.default_amp_dtype == torch.bfloat16
    assert b.GradScaler().is_enabled() is False
    assert NeuronBackend(None, NeuronSettings(emulate=True)).capabilities().compile_backend == "neuron"


def test_xla_mode_declares_what_it_lacks() -> None:
    b = NeuronXlaBackend(None)
    avail = b.availability()
    assert not avail.available and "torch_xla and torch_neuronx are not installed" in avail.reason
    caps = b.capabilities()
    assert caps.supports("mark_step") and not caps.memory_stats
    assert b.dist_backend() == "xla" and b.device_type == "xla"
    with pytest.raises(CapabilityError, match="'neuron-xla' does not support memory_stats"):
        b.memory_allocated()
    with pytest.raises(CapabilityError):
        b.max_memory_allocated()
