"""Fixtures for the neuron plugin tests.

`neuron_emulator` installs the CPU emulation of the neuron device in the test
process. Installing is irreversible, so the whole session shares it; it is
only installed when a test asks for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from accel_abstraction.testing.timeouts import scaled

# The op_db/module_db conformance helpers (neuron_db_harness, neuron_db_xfails) sit next to this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def neuron_emulator() -> torch.device:
    """Install the emulator (once per session) and return the `neuron` device."""
    from accel_neuron import emulator

    emulator.install()
    return torch.device("neuron")


@pytest.fixture
def compiled(neuron_emulator: torch.device):
    """The C++ core's module (``native``), or a skip where the compiled per-op path is off."""
    from accel_neuron.emulator import native

    if native.hot_path() != "native":
        pytest.skip(f"the compiled per-op path is off here ({native.failure() or 'ACCEL_NEURON_EMULATOR_HOT_PATH=python'})")
    return native


@pytest.fixture
def neuron_selected(neuron_emulator: torch.device, monkeypatch: pytest.MonkeyPatch) -> Iterator[torch.device]:
    """The emulated neuron backend selected through accel, as a user selects it; unselected after.

    Selecting it also turns on what the plugin does on selection (tied and lazy parameters
    kept through ``Module.to()``); the teardown restores torch's ``Module._apply``.
    """
    from accel_neuron.plugin import OWNER

    import accel_abstraction as accel
    import accel_abstraction.runtime as runtime
    from accel_abstraction import module_apply
    from accel_abstraction.integrations import huggingface

    for key in list(os.environ):
        if key.startswith("ACCEL_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("ACCEL_NEURON_EMULATE", "1")
    runtime.reset()
    accel.use("neuron")
    yield neuron_emulator
    runtime.reset()
    module_apply.disable(OWNER)
    huggingface.conceal()  # selecting the emulated device pointed accelerate at it (ACCELERATE_TORCH_DEVICE)


@pytest.fixture
def run_python():
    """Run a Python snippet in a fresh interpreter; returns the CompletedProcess."""

    def run(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=scaled(timeout),
            env=env,
        )

    return run


# One fresh interpreter for everything that needs a process of its own (importing torch dominates
# the cost): what importing does before install(), the install log, and the paths that crash a
# process when the emulator does not handle them (C++ allocation of neuron memory).
_FRESH_PROCESS = """
import copy, io, json, logging, torch
out = {}
records = []
class H(logging.Handler):
    def emit(self, r): records.append(r.getMessage())
log = logging.getLogger("accel_neuron.emulator"); log.addHandler(H()); log.setLevel(logging.INFO)
from accel_neuron import emulator
out["installed_after_import"] = emulator.is_installed()
out["torch_neuron_after_import"] = hasattr(torch, "neuron")
out["privateuse1_after_import"] = torch._C._get_privateuse1_backend_name()
from accel_neuron.emulator import storage
try:
    out["storage_path_before_install"] = storage.active().name
except emulator.EmulatorError as e:
    out["storage_path_before_install"] = str(e)
emulator.install(); emulator.install()
out["installed"] = emulator.is_installed() and torch.neuron._is_emulated is True
out["log"] = records
s = torch.UntypedStorage(16, device="neuron")
out["storage"] = [s.device.type, s.nbytes()]
x = torch.arange(4.0, device="neuron")
y = copy.deepcopy(x)
out["deepcopy"] = [y.device.type, torch.equal(y.cpu(), x.cpu()),
                   y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()]
out["storage_clone"] = x.untyped_storage().clone().device.type
buf = io.BytesIO(); torch.save({"x": x}, buf)
out["load"] = {}
for loc in (None, "neuron", "cpu"):
    buf.seek(0)
    z = torch.load(buf, map_location=loc)["x"]
    out["load"][str(loc)] = [z.device.type, torch.equal(z.cpu(), x.cpu())]
buf = io.BytesIO(); torch.save(torch.ones(2), buf); buf.seek(0)
out["load_cpu_file_to_neuron"] = torch.load(buf, map_location="neuron").device.type
print("RESULT" + json.dumps(out))
"""


@pytest.fixture(scope="session")
def fresh_process() -> dict:
    """Results of `_FRESH_PROCESS`, run once per session in a new interpreter."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    proc = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS], capture_output=True, text=True, timeout=scaled(300), env=env
    )
    assert proc.returncode == 0, (
        f"fresh emulator process failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}"
    )
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    return json.loads(line[len("RESULT") :])
