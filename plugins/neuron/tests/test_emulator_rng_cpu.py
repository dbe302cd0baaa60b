"""ACCEL_NEURON_EMULATE_RNG=cpu: random ops on the emulated device draw exactly what the CPU op draws.

Each case runs in a fresh interpreter (the mode is fixed when the emulator installs), on the
compiled per-op path and on the Python one, and compares a sequence of random draws made on
the CPU with the same sequence made on the device, CPU draws interleaved: bitwise equal under
``cpu``, all different under the default ``device`` mode (the device's own generators).
"""

from __future__ import annotations

import json

import pytest

CASES = """
import json, torch, torch.nn.functional as F
import accel_abstraction as accel
accel.use("neuron")  # installs the emulator with the configured emulate_rng

def draws(dev):
    torch.manual_seed(0)
    out = [torch.rand(3, device=dev)]
    out.append(F.dropout(torch.ones(64, device=dev), 0.5))
    out.append(torch.randn(2))  # a CPU draw in between, as a script's data sampling
    out.append(torch.ones(32, device=dev).bernoulli_(0.3))
    out.append(torch.native_dropout(torch.ones(16, device=dev), 0.5, True)[0])
    out.append(torch.randint(0, 100, (5,), device=dev))
    out.append(torch.randperm(7, device=dev))
    out.append(torch.multinomial(torch.ones(10, device=dev), 4))
    g = torch.Generator(device=dev).manual_seed(3)
    out.append(torch.rand(4, generator=g, device=dev))
    out.append(torch.nn.Dropout(0.3)(torch.ones(8, 8, device=dev, requires_grad=True)))
    return [t.detach().cpu() for t in out]

cpu, dev = draws("cpu"), draws("neuron")
print(json.dumps({"equal": [bool(torch.equal(a, b)) for a, b in zip(cpu, dev)], "path": %r}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("hot_path", ["native", "python"])
@pytest.mark.parametrize("mode", ["cpu", "device"])
def test_device_draws_against_cpu_draws(run_python, monkeypatch: pytest.MonkeyPatch, mode: str, hot_path: str) -> None:
    monkeypatch.setenv("ACCEL_NEURON_EMULATE", "1")
    monkeypatch.setenv("ACCEL_NEURON_EMULATE_RNG", mode)
    monkeypatch.setenv("ACCEL_NEURON_EMULATOR_HOT_PATH", hot_path)
    proc = run_python(CASES % hot_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    equal = json.loads(proc.stdout.strip().splitlines()[-1])["equal"]
    if mode == "cpu":
        assert all(equal), equal
    else:
        assert not any(equal), equal  # the default: the device's own streams, as real hardware


def test_the_setting_is_declared_with_the_plugin_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_neuron.settings import NEURON

    from accel_abstraction.errors import ConfigError

    assert NEURON.load().emulate_rng == "device"
    monkeypatch.setenv("ACCEL_NEURON_EMULATE_RNG", "cpu")
    assert NEURON.load().emulate_rng == "cpu"
    monkeypatch.setenv("ACCEL_NEURON_EMULATE_RNG", "gpu")
    with pytest.raises(ConfigError, match="ACCEL_NEURON_EMULATE_RNG"):
        NEURON.load()
