"""Several emulated devices, and tensors on two devices failing as they do on CUDA.

A CPU tensor meeting a neuron tensor, or tensors on neuron:0 and neuron:1 meeting, raise
CUDA's error; every device has its own memory statistics and generator; the current
device (per thread) decides where tensors without an index go, for PyTorch's C++ code too.
"""

from __future__ import annotations

import copy
import gc
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("neuron_emulator")

SAME_DEVICE = "Expected all tensors to be on the same device"


# (d, other) -> an op on both; `other` is on the CPU or on another neuron device
MIXES = {
    "add": lambda d, o: d + o,
    "matmul": lambda d, o: d @ o.T,
    "cat": lambda d, o: torch.cat([d, o]),
    "linear": lambda d, o: F.linear(o, d),
    "where": lambda d, o: torch.where(o > 0, d, d),
    "add_": lambda d, o: d.add_(o),
}


@pytest.mark.parametrize("fn", MIXES.values(), ids=MIXES.keys())
def test_cpu_tensor_meeting_neuron_tensor_raises(fn):
    d, c = torch.randn(3, 4, device="neuron"), torch.randn(3, 4)
    with pytest.raises(RuntimeError, match=SAME_DEVICE) as info:
        fn(d, c)
    assert "neuron:0" in str(info.value) and "cpu" in str(info.value)


def test_model_with_input_left_on_cpu_raises():
    model = torch.nn.Linear(4, 2).to("neuron")
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        model(torch.randn(3, 4))


def test_allowed_mixes_work_like_cuda():
    d = torch.arange(12.0, device="neuron").reshape(3, 4)
    assert (d * torch.tensor(2.0)).cpu()[1, 1].item() == 10.0  # 0-dim CPU scalar
    assert d[torch.tensor([0, 2])].cpu()[:, 0].tolist() == [0.0, 8.0]  # CPU index tensor
    d[torch.tensor([1])] = torch.tensor(-1.0)
    assert d.cpu()[1].tolist() == [-1.0] * 4
    d.copy_(torch.ones(3, 4))  # copies cross devices
    assert d.cpu().sum().item() == 12.0


def test_backward_returning_cpu_gradient_raises():
    class LeaksToCpu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad.cpu()

    w = torch.randn(4, device="neuron", requires_grad=True)
    with pytest.raises(RuntimeError, match="expected device neuron:0 but got cpu"):
        LeaksToCpu.apply(w).sum().backward()


def test_backward_with_cpu_tensor_in_the_graph_raises():
    w = torch.randn(4, device="neuron", requires_grad=True)
    c = torch.randn(4)

    class MixesInBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * c  # a CPU tensor enters the backward computation

    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        MixesInBackward.apply(w).sum().backward()


# ---------------------------------------------------------------- several devices (neuron:0, neuron:1)


@pytest.fixture
def on_device_0():
    """Every test starts and ends with neuron:0 current."""
    torch.neuron.set_device(0)
    yield
    torch.neuron.set_device(0)


def test_default_count_is_two_and_tensors_report_their_index():
    assert torch.neuron.device_count() == 2 == torch.accelerator.device_count()
    a = torch.ones(2, 3, device="neuron:1")
    b = torch.randn(2, 3, device=torch.device("neuron", 1))
    results = [a, b, a + b, a.t(), a[0], (a @ b.T).relu_(), torch.stack([a, b]), a.sum(), a.to(torch.float64)]
    assert [(t.device.type, t.get_device()) for t in results] == [("neuron", 1)] * len(results)
    assert str(a.device) == "neuron:1" and a.untyped_storage().device == torch.device("neuron", 1)
    assert torch.equal((a + b).cpu(), a.cpu() + b.cpu())


NEURON_MIXES = {**MIXES, "0-dim": lambda d, o: d + o.sum()}  # a 0-dim neuron:1 tensor is no CPU scalar


@pytest.mark.parametrize("fn", NEURON_MIXES.values(), ids=NEURON_MIXES.keys())
def test_tensors_on_two_neuron_devices_raise_the_cuda_error(fn):
    d, o = torch.randn(3, 4, device="neuron:0"), torch.randn(3, 4, device="neuron:1")
    with pytest.raises(RuntimeError, match=SAME_DEVICE) as info:
        fn(d, o)
    assert {m for m in re.findall(r"neuron:\d", str(info.value).split("!")[0])} == {"neuron:0", "neuron:1"}


def test_copies_between_devices_keep_values():
    x0 = torch.randn(4, 5, device="neuron:0")
    x1 = x0.to("neuron:1")
    assert x1.device == torch.device("neuron", 1) and torch.equal(x1.cpu(), x0.cpu())
    assert x1.untyped_storage().data_ptr() != x0.untyped_storage().data_ptr()
    y0 = torch.zeros(5, 4, device="neuron:0")
    y0.copy_(x1.t())
    assert y0.device.index == 0 and torch.equal(y0.cpu(), x0.cpu().t())
    back = x1.to("neuron:0", torch.float64)
    assert back.device.index == 0 and torch.equal(back.cpu(), x0.cpu().double())
    m = torch.nn.Linear(5, 2).to("neuron:1")
    assert {p.device for p in m.parameters()} == {torch.device("neuron", 1)}


def test_current_device_decides_where_unindexed_tensors_go(on_device_0):
    cpu = torch.arange(3.0)
    with torch.neuron.device(1):
        assert torch.neuron.current_device() == 1 == torch.accelerator.current_device_index()
        made = [
            torch.ones(2, device="neuron"),
            torch.tensor([1.0, 2.0], device="neuron"),
            cpu.to("neuron"),
            cpu.neuron(),
            torch.empty(2, device="neuron").normal_(),
            torch.nn.Linear(2, 2).to("neuron").weight,
        ]
        assert [t.get_device() for t in made] == [1] * len(made)
        with torch.neuron.device(0):
            assert torch.ones(1, device="neuron").get_device() == 0
        assert torch.neuron.current_device() == 1
    assert torch.neuron.current_device() == 0 and cpu.to("neuron").get_device() == 0
    torch.neuron.set_device(1)
    assert torch.zeros(1, device="neuron").get_device() == 1
    with torch.accelerator.device_index(0):
        assert torch.zeros(1, device="neuron").get_device() == 0
    assert torch.accelerator.current_device_index() == 1
    torch.accelerator.set_device_index(0)
    assert torch.neuron.current_device() == 0


def test_current_device_is_per_thread(on_device_0):
    seen = []
    torch.neuron.set_device(1)
    t = threading.Thread(
        target=lambda: seen.append(
            (torch.neuron.current_device(), torch.ones(1, device="neuron").get_device())
        )
    )
    t.start()
    t.join()
    assert seen == [(0, 0)] and torch.neuron.current_device() == 1


def test_memory_statistics_are_per_device():
    torch.neuron.synchronize()
    gc.collect()  # an earlier test's cyclic garbage on neuron:1, freed mid-test, would move the counts
    before = [torch.neuron.memory_allocated(i) for i in range(2)]
    x = torch.empty(1024, device="neuron:1")
    assert torch.neuron.memory_allocated(1) == before[1] + 4096
    assert torch.neuron.memory_allocated(0) == before[0]
    assert torch.neuron.memory_allocated("neuron:1") == torch.accelerator.memory_allocated(1)
    torch.neuron.reset_peak_memory_stats(0)
    peak1 = torch.neuron.max_memory_allocated(1)
    del x
    assert torch.neuron.memory_allocated(1) == before[1] and torch.neuron.max_memory_allocated(1) == peak1
    assert "neuron:1" in torch.neuron.memory_summary(1)


def test_each_device_has_its_own_generator(on_device_0):
    torch.manual_seed(7)  # seeds every device, like CUDA
    a0, a1 = torch.rand(4, device="neuron:0"), torch.rand(4, device="neuron:1")
    assert torch.equal(a0.cpu(), a1.cpu())  # same seed, same stream
    state1 = torch.neuron.get_rng_state(1)
    torch.rand(100, device="neuron:0")  # drawing on neuron:0 leaves neuron:1 alone
    assert torch.equal(torch.neuron.get_rng_state(1), state1)
    with torch.neuron.device(1):
        torch.neuron.manual_seed(3)  # the current device only
        assert torch.neuron.initial_seed() == 3 and torch.neuron.get_rng_state().equal(
            torch.neuron.get_rng_state(1)
        )
    assert torch.neuron.initial_seed() == 7
    torch.neuron.set_rng_state(torch.get_rng_state(), "neuron:1")
    cpu = torch.nn.functional.dropout(torch.ones(64), 0.5)
    dev = torch.nn.functional.dropout(torch.ones(64, device="neuron:1"), 0.5)
    assert torch.equal(cpu, dev.cpu())


def test_load_deepcopy_and_storage_on_device_1(on_device_0):
    m = torch.nn.Linear(3, 2).to("neuron:0")
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    for where, index in (("neuron:1", 1), ("neuron:0", 0), (None, 0)):
        buf.seek(0)
        sd = torch.load(buf, map_location=where)
        assert {v.get_device() for v in sd.values()} == {index}
        assert all(torch.equal(sd[k].cpu(), v.cpu()) for k, v in m.state_dict().items())
    buf.seek(0)
    with torch.neuron.device(1):  # no index: the current device, as for CUDA
        assert {v.get_device() for v in torch.load(buf, map_location="neuron").values()} == {1}
    m1 = copy.deepcopy(m.to("neuron:1"))
    assert m1.weight.get_device() == 1 and torch.equal(m1.weight.cpu(), m.weight.cpu())
    assert torch.UntypedStorage(8, device="neuron:1").device == torch.device("neuron", 1)


def test_training_on_device_1_matches_the_cpu_bitwise():
    def run(device: str) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to(
            device
        )
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        x, y = torch.randn(32, 8), torch.randn(32, 4)
        for _ in range(3):
            loss = F.mse_loss(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert {p.device for p in model.parameters()} == {torch.device(device)}
        return [p.detach().cpu() for p in model.parameters()]

    assert all(torch.equal(a, b) for a, b in zip(run("cpu"), run("neuron:1"), strict=True))


def test_accel_api_reaches_device_1(monkeypatch, on_device_0):
    import accel_abstraction as accel

    monkeypatch.setenv("ACCEL_NEURON_EMULATE", "1")
    with accel.using("neuron"):
        assert accel.device_count() == 2 and accel.device(1) == torch.device("neuron", 1)
        accel.set_device(1)
        assert accel.current_device() == 1 and torch.ones(1, device=accel.device()).get_device() == 1
        assert accel.memory_allocated(1) == torch.neuron.memory_allocated(1)
        accel.set_device(0)


def test_device_count_comes_from_the_setting_and_is_checked(monkeypatch, tmp_path):
    from accel_neuron.settings import NEURON

    from accel_abstraction.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    assert NEURON.load().emulate_devices == 2
    (tmp_path / "pyproject.toml").write_text("[tool.accel.neuron]\nemulate_devices = 4\n")
    assert NEURON.load().emulate_devices == 4
    monkeypatch.setenv("ACCEL_NEURON_EMULATE_DEVICES", "0")
    with pytest.raises(
        ConfigError, match="environment variable ACCEL_NEURON_EMULATE_DEVICES: invalid value '0'"
    ):
        NEURON.load()
    monkeypatch.delenv("ACCEL_NEURON_EMULATE_DEVICES")
    (tmp_path / "pyproject.toml").write_text("[tool.accel.neuron]\nemulate_devices = -1\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml:2 \[tool.accel.neuron\] emulate_devices"):
        NEURON.load()


def test_reinstall_with_another_count_is_refused():
    from accel_neuron import emulator

    emulator.install(2)  # the same count: nothing to do
    with pytest.raises(emulator.EmulatorError, match="already installed with 2 devices"):
        emulator.install(3, source="a test")


def test_count_from_the_environment_and_a_clear_error_without_the_cpp_core(run_python, monkeypatch):
    monkeypatch.setenv("ACCEL_NEURON_EMULATE_DEVICES", "3")
    proc = run_python(
        """
        import json, torch
        from accel_neuron.emulator import native

        def no_compiler():
            raise OSError("no C++ compiler found")

        native._build = no_compiler
        from accel_neuron import emulator
        emulator.install()
        out = {"count": torch.neuron.device_count(), "on_2": str(torch.ones(1, device="neuron:2").device)}
        try:
            torch.neuron.set_device(1)
        except emulator.EmulatorError as e:
            out["error"] = str(e)
        out["current"] = [torch.neuron.current_device(), str(torch.ones(1).to("neuron").device)]
        out["path"] = native.hot_path()  # every op on the pure-Python kernel
        print("RESULT" + json.dumps(out))
        """
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))[6:])
    assert out["count"] == 3 and out["on_2"] == "neuron:2"
    assert out["current"] == [0, "neuron:0"] and out["path"] == "python"
    assert "cannot make neuron:1 the current device" in out["error"]
    assert "OSError: no C++ compiler found" in out["error"] and "neuron:1" in out["error"]
    assert "its C++ core could not be built" in proc.stderr


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_two_ranks_use_neuron_0_and_neuron_1(tmp_path):
    script = Path(__file__).parent / "scripts" / "device_mesh_rank.py"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    base.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", TORCH_DEVICE_BACKEND_AUTOLOAD="0"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, str(script)],
            env=dict(base, RANK=str(r), LOCAL_RANK=str(r)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in (0, 1)
    ]
    results = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=180)
            assert p.returncode == 0, stderr[-3000:]
            results.append(json.loads(next(ln for ln in stdout.splitlines() if ln.startswith("RESULT"))[6:]))
    finally:
        for p in procs:
            p.kill()
    for rank, out in enumerate(results):
        assert out["current"] == rank
        assert out["all_reduce"] == [f"neuron:{rank}", [3.0, 3.0]]
        assert out["ddp_grad"] == f"neuron:{rank}"
        assert out["dtensor_local"] == [f"neuron:{rank}", [2.0 * rank, 2.0 * rank + 1]]
        assert out["dtensor_full"] == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("device", ["neuron:0", "neuron:1"])
def test_storage_resize_frees_and_reallocates_under_live_views(device):
    # what FSDP does with parameter storage between steps: resize_(0), later resize_(n)
    index = torch.device(device).index
    base = torch.neuron.memory_allocated(index)
    t = torch.arange(6.0, device=device)
    view = t.view(2, 3)
    st = t.untyped_storage()
    st.resize_(0)
    assert st.nbytes() == 0 and torch.neuron.memory_allocated(index) == base
    st.resize_(24)
    assert torch.neuron.memory_allocated(index) == base + 24
    t.copy_(torch.arange(6.0) * 2)
    assert view.cpu().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]] and view.get_device() == index
    st.resize_(48)  # growing keeps the bytes
    assert t.cpu().tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert torch.neuron.memory_allocated(index) == base + 48
    del t, view, st
    assert torch.neuron.memory_allocated(index) == base
