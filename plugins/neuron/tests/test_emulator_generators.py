"""Device generators, pinned memory and seeding before install: the C++ core's PrivateUse1 hooks.

``torch.Generator(device="neuron")`` follows the emulator's generator design (a CPU stream,
seeds mixed so the device stream differs from the CPU's); without the C++ core it is a clear
error and ``accel run`` does not report the site as redirected.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron_emulator")

SCRIPT = Path(__file__).parent / "scripts" / "sample_with_generator.py"


@pytest.fixture
def core(neuron_emulator: torch.device) -> None:
    """Skip (with the reason) where the emulator's C++ core could not be built."""
    from accel_neuron.emulator import native

    if native.library() is None:
        pytest.skip(f"the emulator's C++ core could not be built here: {native.failure()}")


needs_core = pytest.mark.usefixtures("core")


@needs_core
def test_a_device_generator_draws_the_default_generators_stream_for_its_seed():
    g = torch.Generator(device="neuron")
    assert g.device == torch.device("neuron", 0) and g.initial_seed() == 67280421310721
    g.manual_seed(5)
    assert g.initial_seed() == 5
    a = torch.randn(6, generator=g, device="neuron")
    torch.neuron.manual_seed(5)
    assert torch.equal(a.cpu(), torch.randn(6, device="neuron").cpu())
    assert not torch.equal(a.cpu(), torch.randn(6, generator=torch.Generator().manual_seed(5)))


@needs_core
def test_device_generator_sampling_is_reproducible_per_device():
    def draw(device: str) -> list[torch.Tensor]:
        g = torch.Generator(device=device).manual_seed(11)
        probs = torch.softmax(torch.arange(10.0, device=device), 0)
        return [
            torch.multinomial(probs, 4, generator=g),
            torch.rand(3, generator=g, device=device),
            torch.randperm(6, generator=g, device=device),
            torch.empty(4, device=device).normal_(generator=g),
            torch.bernoulli(torch.full((8,), 0.5, device=device), generator=g),
        ]

    first, again, other = draw("neuron:0"), draw("neuron:0"), draw("neuron:1")
    assert all(x.device == torch.device("neuron", 0) for x in first)
    assert all(torch.equal(x.cpu(), y.cpu()) for x, y in zip(first, again, strict=True))
    assert all(y.device == torch.device("neuron", 1) for y in other)
    assert all(
        torch.equal(x.cpu(), y.cpu()) for x, y in zip(first, other, strict=True)
    )  # same seed, same stream


@needs_core
def test_generator_states_are_the_cpus_and_clones_are_independent():
    cpu = torch.Generator().manual_seed(3)
    g = torch.Generator(device="neuron")
    g.set_state(cpu.get_state())
    assert torch.equal(torch.rand(5, generator=g, device="neuron").cpu(), torch.rand(5, generator=cpu))
    state = g.get_state()
    first = torch.rand(4, generator=g, device="neuron")
    g.set_state(state)
    assert torch.equal(torch.rand(4, generator=g, device="neuron").cpu(), first.cpu())
    seed = g.seed()
    assert g.initial_seed() == seed


@needs_core
def test_device_generators_survive_deepcopy_and_pickle():
    import copy
    import pickle

    g = torch.Generator(device="neuron:1").manual_seed(9)
    torch.rand(2, generator=g, device="neuron:1")  # not at the start of its stream
    for twin in (copy.deepcopy(g), pickle.loads(pickle.dumps(g))):
        assert twin.device == torch.device("neuron", 1) and twin.initial_seed() == 9
        assert torch.equal(twin.get_state(), g.get_state())
    with pytest.raises(RuntimeError, match="have no offset"):
        g.set_offset(4)


@needs_core
def test_a_cpu_generator_on_a_neuron_op_is_cudas_error():
    with pytest.raises(RuntimeError, match="Expected a 'neuron' device type for generator but found 'cpu'"):
        torch.randn(3, device="neuron", generator=torch.Generator())


@needs_core
def test_pinned_memory_is_pinned_and_dataloader_pins_batches():
    x = torch.arange(4.0)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.data_ptr() != x.data_ptr() and torch.equal(p, x)
    assert torch.equal(p.to("neuron", non_blocking=True).cpu(), x)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.arange(6.0)), batch_size=3, pin_memory=True
    )
    batches = [b[0] for b in loader]
    assert [b.tolist() for b in batches] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert all(b.is_pinned() for b in batches)


@needs_core
def test_torch_accelerator_sees_the_devices():
    assert torch.accelerator.device_count() == torch.neuron.device_count()
    assert torch.accelerator.current_device_index() == torch.neuron.current_device()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    env.update(TORCH_DEVICE_BACKEND_AUTOLOAD="0", ACCEL_BACKEND="neuron", ACCEL_NEURON_EMULATE="1", **extra)
    return env


def _accel_run(tmp_path: Path, name: str, **extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / f"{name}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "accel_abstraction.cli", "run", "-o", str(report), str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(**extra),
    )
    data = json.loads(report.read_text()) if report.exists() else {}
    return proc, {s["api"]: s["status"] for s in data.get("sites", [])}


@pytest.mark.slow
@needs_core
def test_a_cuda_script_samples_with_a_device_generator_under_accel_run(tmp_path):
    proc, sites = _accel_run(tmp_path, "run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sites['torch.Generator(device="cuda")'] == "redirected"
    samples = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("SAMPLES"))[7:])
    assert samples["device"] == "neuron:0" and len(samples["tokens"]) == 8 and len(samples["noise"]) == 3


@pytest.mark.slow
def test_without_the_core_a_device_generator_is_an_error_and_not_reported_redirected(tmp_path):
    # an extensions directory that cannot be created: the core cannot build, the emulator runs without it
    proc, sites = _accel_run(tmp_path, "nocore", TORCH_EXTENSIONS_DIR="/dev/null/no-extensions")
    assert proc.returncode != 0
    assert "its C++ core could not be built" in proc.stderr
    assert "getNewGenerator" in proc.stderr
    assert sites.get('torch.Generator(device="cuda")') != "redirected"


def _dropout_after_seeding(seed: int, extensions: str | None = None) -> subprocess.Popen:
    code = f"""
import json, torch
import accel_abstraction as accel
torch.manual_seed({seed})          # before the emulated device exists
d = accel.device()                 # selects neuron: the emulator installs here
before = torch.nn.functional.dropout(torch.ones(32, device=d), 0.5)
torch.manual_seed({seed})          # after install: reaches torch.neuron directly
after = torch.nn.functional.dropout(torch.ones(32, device=d), 0.5)
pinned = torch.arange(3.0).pin_memory().is_pinned()
print("RESULT" + json.dumps({{"mask": before.tolist(), "same_as_after": torch.equal(before, after),
                             "seed": torch.neuron.initial_seed(), "pinned": pinned}}))
"""
    extra = {"TORCH_EXTENSIONS_DIR": extensions} if extensions else {}
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(**extra),
    )


@pytest.mark.slow
def test_a_seed_set_before_the_device_exists_reaches_its_generator():
    procs = [_dropout_after_seeding(s) for s in (0, 1, 2)]
    procs.append(_dropout_after_seeding(1, extensions="/dev/null/no-extensions"))  # pure-Python path too
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(next(ln for ln in out.splitlines() if ln.startswith("RESULT"))[6:]))
    masks = [r["mask"] for r in results]
    assert masks[0] != masks[1] and masks[1] != masks[2] and masks[0] != masks[2]
    assert masks[3] == masks[1]  # same seed, same mask, with or without the C++ core
    assert all(r["same_as_after"] for r in results)
    assert [r["seed"] for r in results] == [0, 1, 2, 1]
    assert results[3]["pinned"] is False  # without the core pin_memory() is an unpinned copy
