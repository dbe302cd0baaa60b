"""Memory statistics follow neuron storages exactly: allocation, views, frees, peaks."""

from __future__ import annotations

import gc

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron_emulator")


def test_allocation_and_free_move_memory_allocated_exactly():
    gc.collect()
    base = torch.neuron.memory_allocated()
    t = torch.empty(1000, device="neuron")
    assert torch.neuron.memory_allocated() - base == 4000
    views = [t[10:20], t.view(10, 100), t.t() if t.dim() == 2 else t.unsqueeze(0), t.detach()]
    param = torch.nn.Parameter(t)
    assert torch.neuron.memory_allocated() - base == 4000  # views share the storage
    u = torch.zeros(10, dtype=torch.float64, device="neuron")
    assert torch.neuron.memory_allocated() - base == 4080
    del t, views, param
    assert torch.neuron.memory_allocated() - base == 80
    del u
    assert torch.neuron.memory_allocated() == base
    assert torch.neuron.memory_reserved() == torch.neuron.memory_allocated()


def test_peak_and_reset():
    gc.collect()
    base = torch.neuron.memory_allocated()
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() == base
    a = torch.empty(2500, device="neuron")
    b = torch.empty(500, device="neuron")
    del a
    assert torch.neuron.max_memory_allocated() - base == 12000
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() - base == 2000
    del b


def test_memory_stats_and_summary_and_accumulated_counts():
    torch.neuron.reset_accumulated_memory_stats()
    stats = torch.neuron.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.neuron.memory_allocated()
    assert stats["allocation.all.allocated"] == 0
    x = torch.empty(10, device="neuron")
    del x
    stats = torch.neuron.memory_stats()
    assert stats["allocation.all.allocated"] == 1 and stats["allocation.all.freed"] == 1
    assert "allocated" in torch.neuron.memory_summary()


def test_training_step_frees_its_temporaries():
    model = torch.nn.Linear(64, 64).to("neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 64, device="neuron")

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()

    step()
    gc.collect()
    after_one = torch.neuron.memory_allocated()
    for _ in range(3):
        step()
    gc.collect()
    assert torch.neuron.memory_allocated() == after_one


def test_torch_accelerator_memory_functions_report_the_same_numbers():
    x = torch.empty(256, device="neuron")
    assert torch.accelerator.memory_allocated() == torch.neuron.memory_allocated()
    assert torch.accelerator.max_memory_allocated() == torch.neuron.max_memory_allocated()
    free, total = torch.accelerator.get_memory_info()
    assert total == torch.neuron.get_device_properties().total_memory and free <= total
    torch.accelerator.synchronize()
    torch.accelerator.empty_cache()
    del x


def test_torch_accelerator_and_torch_neuron_agree_on_every_statistic_and_reset() -> None:
    # compiled path: torch.accelerator reads the C++ core through its c10 device allocator and torch.neuron
    # through ctypes; Python path: limits.py routes torch.accelerator to torch.neuron. Both resets alike.
    x = torch.empty(300, device="neuron")
    del x
    y = torch.empty(100, device="neuron")

    def both() -> tuple[dict, dict]:
        ours = dict(torch.neuron.memory_stats())
        theirs = torch.accelerator.memory_stats()
        return ours, {k: theirs[k] for k in ours}

    ours, theirs = both()
    assert ours == theirs and ours["allocated_bytes.all.allocated"] >= 1600
    torch.accelerator.reset_peak_memory_stats()
    ours, theirs = both()
    assert ours == theirs and ours["allocated_bytes.all.peak"] == ours["allocated_bytes.all.current"]
    assert ours["allocation.all.peak"] == ours["allocation.all.current"]
    torch.accelerator.reset_accumulated_memory_stats()
    ours, theirs = both()
    assert ours == theirs and ours["allocated_bytes.all.current"] >= 400
    assert [ours[f"{k}.all.{m}"] for k in ("allocated_bytes", "allocation") for m in ("allocated", "freed")] == [0] * 4
    torch.neuron.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == torch.neuron.memory_allocated()
    assert torch.accelerator.get_memory_info()[0] == torch.neuron.get_device_properties().total_memory - (
        torch.neuron.memory_allocated()
    )
    del y


def test_the_c10_device_allocator_serves_statistics_and_refuses_raw_bytes() -> None:
    from accel_neuron.emulator import memory, native

    if native.hot_path() != "native":
        pytest.skip("the C++ core's device allocator serves the compiled per-op path only")
    assert memory.in_core() and torch._C._accelerator_isAllocatorInitialized()
    with pytest.raises(NotImplementedError, match=r"not through c10's allocator \(8 bytes were asked of it\)"):
        torch._C.StorageBase.__new__(torch.UntypedStorage, 8, device="neuron")  # PyTorch's own, unpatched


# ---------------------------------------------------------------- finite device memory

_MiB = 2**20


@pytest.fixture
def small_device() -> int:
    """60 MiB free on each emulated device for the test (the configured capacity is restored after)."""
    from accel_neuron.emulator import memory

    saved = memory.capacity(), memory._capacity["source"]
    gc.collect()
    size = torch.neuron.memory_allocated() + 60 * _MiB
    memory.configure(size, "the test's small_device fixture")
    yield size
    memory.configure(*saved)


def _counts() -> tuple[int, int]:
    """Bytes and live allocations (a refused op may make and free temporaries: those even out)."""
    return torch.neuron.memory_allocated(), torch.neuron.memory_stats()["allocation.all.current"]


def test_the_default_device_has_a_trainium2_logical_cores_memory():
    from accel_neuron.emulator import memory
    from accel_neuron.settings import NEURON

    assert NEURON.defaults["emulate_memory"] == memory.DEFAULT_CAPACITY == 24 * 2**30
    assert torch.neuron.get_device_properties().total_memory == memory.capacity()


@pytest.mark.parametrize(
    "allocate",
    [
        lambda n: torch.empty(n, dtype=torch.uint8, device="neuron"),
        lambda n: torch.empty(n, dtype=torch.uint8).to("neuron"),
        lambda n: torch.UntypedStorage(n, device="neuron"),
        lambda n: torch.zeros(1, dtype=torch.uint8, device="neuron").expand(n).contiguous(),
    ],
    ids=["empty", "to", "untyped_storage", "op_result"],
)
def test_an_allocation_past_the_device_memory_raises_cudas_out_of_memory(small_device: int, allocate) -> None:
    held = allocate(40 * _MiB)  # 40 of the 60 MiB free
    before = _counts()
    with pytest.raises(
        torch.OutOfMemoryError,
        match=r"^neuron out of memory\. Tried to allocate 40\.00 MiB\. Device neuron:0 has a total capacity of "
        r"[\d.]+ MiB of which 20\.00 MiB is free\. Of the allocated memory [\d.]+ MiB is allocated by PyTorch"
        r".*ACCEL_NEURON_EMULATE_MEMORY",
    ):
        allocate(40 * _MiB)
    gc.collect()
    assert _counts() == before  # the refused allocation is neither counted nor kept
    free, total = torch.accelerator.get_memory_info()
    assert total == small_device and free == total - torch.neuron.memory_allocated() >= 0
    del held
    gc.collect()
    again = allocate(40 * _MiB)  # the memory came back
    assert torch.neuron.memory_allocated() >= 40 * _MiB
    del again


def test_the_error_is_caught_as_cuda_code_catches_it(small_device: int) -> None:
    """Code that halves its batch on OOM (the pattern of accelerate's find_executable_batch_size)."""
    batch = 64
    while True:
        try:
            x = torch.empty(batch, _MiB, dtype=torch.uint8, device="neuron")
            break
        except torch.OutOfMemoryError:
            batch //= 2
    assert batch == 32 and x.device.type == "neuron"


def test_a_host_allocation_failure_is_out_of_memory_too() -> None:
    from accel_neuron.emulator import memory

    before = _counts()
    huge = 2**50  # no host has a PiB: the CPU allocator fails
    with pytest.raises(torch.OutOfMemoryError, match=r"Tried to allocate 1048576\.00 GiB\. .*total capacity"):
        torch.empty(huge, dtype=torch.uint8, device="neuron")
    saved = memory.capacity(), memory._capacity["source"]
    memory.configure(2**60, "the test")  # a device that could hold it: the host is what failed
    try:
        with pytest.raises(
            torch.OutOfMemoryError, match=r"the host, whose memory backs the emulated device, could not"
        ):
            torch.empty(huge, dtype=torch.uint8, device="neuron")
        for allocate in (
            lambda: torch.UntypedStorage(huge, device="neuron"),
            lambda: torch.ones(huge, dtype=torch.uint8, device="neuron"),
        ):
            with pytest.raises(
                torch.OutOfMemoryError,
                match=r"could not allocate it \(DefaultCPUAllocator: .* 1125899906842624 bytes\)\. Free",
            ):
                allocate()
    finally:
        memory.configure(*saved)
    assert _counts() == before


def test_num_ooms_counts_each_out_of_memory_until_the_accumulated_reset(small_device: int) -> None:
    """``memory_stats()["num_ooms"]`` as CUDA counts it: one per raised OOM, device or host, zeroed by the reset."""
    torch.neuron.reset_accumulated_memory_stats()
    assert torch.neuron.memory_stats()["num_ooms"] == 0
    for n in (61 * _MiB, 2**50, 100 * _MiB):  # past the 60 MiB device, past any host, past the device again
        with pytest.raises(torch.OutOfMemoryError):
            torch.empty(n, dtype=torch.uint8, device="neuron")
    with pytest.raises(torch.OutOfMemoryError):
        torch.ones(61 * _MiB, dtype=torch.uint8, device="neuron")  # through an op's result
    x = torch.empty(_MiB, dtype=torch.uint8, device="neuron")  # a success counts nothing
    assert torch.neuron.memory_stats()["num_ooms"] == 4
    torch.neuron.reset_accumulated_memory_stats()
    assert torch.neuron.memory_stats()["num_ooms"] == 0 and x.device.type == "neuron"


def test_the_setting_sizes_the_device(neuron_selected, monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_neuron.emulator import memory

    import accel_abstraction as accel
    import accel_abstraction.runtime as runtime

    monkeypatch.setenv("ACCEL_NEURON_EMULATE_MEMORY", str(48 * _MiB))
    runtime.reset()
    accel.use("neuron")
    try:
        assert torch.neuron.get_device_properties().total_memory == 48 * _MiB
        assert torch.accelerator.get_memory_info()[1] == 48 * _MiB
        with pytest.raises(
            torch.OutOfMemoryError,
            match=r"emulate_memory = 50331648 bytes \(environment variable ACCEL_NEURON_EMULATE_MEMORY\)",
        ):
            torch.empty(49 * _MiB, dtype=torch.uint8, device="neuron")
    finally:
        memory.configure(memory.DEFAULT_CAPACITY, "default")


@pytest.fixture
def core():
    from accel_neuron.emulator import native

    if not native.load():
        pytest.skip(f"the C++ core cannot be built here: {native.failure()}")
    return native


def test_the_cpp_core_and_memory_py_keep_the_same_statistics(core) -> None:
    # the names come from the library (csrc/emulator.h's ACCEL_NEURON_EMU_STATS): one list per side, compared
    from accel_neuron.emulator import memory
    from accel_neuron.emulator.errors import EmulatorError

    assert core.stat_names() == memory._KEYS
    assert set(core.memory_get(0)) == set(memory._KEYS)

    class Renamed:
        @staticmethod
        def stat_names() -> tuple[str, ...]:
            return (*memory._KEYS[1:], "reserved")

    with pytest.raises(EmulatorError, match=r"its list of statistics\) and memory\._KEYS must name the same"):
        memory.use_native(Renamed())


def test_a_device_past_the_cpp_cores_statistics_is_an_error_not_a_stray_write(core) -> None:
    from accel_neuron.emulator.errors import EmulatorError

    last = core.max_devices() - 1
    assert core.max_devices() == 64 and set(core.memory_get(last).values()) == {0}
    for index in (core.max_devices(), -1):
        with pytest.raises(EmulatorError, match=rf"neuron:{index} has no memory statistics: .* devices 0\.\.{last}"):
            core.memory_get(index)
        with pytest.raises(EmulatorError, match=rf"neuron:{index} has no memory statistics"):
            core.memory_set(index, dict.fromkeys(core.stat_names(), 1))
    with pytest.raises(IndexError, match=r"neuron:64 has no memory statistics"):
        torch.ops.accel_neuron_emu.to_neuron(torch.ones(3), 64)
    assert set(core.memory_get(last).values()) == {0}
