"""Copy-on-write neuron tensors: ``Tensor._lazy_clone`` as c10 does it on the CPU and CUDA.

On both per-op paths (with the C++ core) the clone and the original share one memory, both c10
copy-on-write (``torch._C._is_cow_tensor``), until a write gives the written one memory of its own;
reads never do. Without the core (no compiler) the clone is a copy made at once: the values are the
same, nothing is copy-on-write.
"""

from __future__ import annotations

import gc

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron_emulator")

_cow = torch._C._is_cow_tensor
_address = torch._C._data_address
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8, torch.bool, torch.complex64]


def _copy_on_write() -> bool:
    """Whether this process makes copy-on-write clones (the C++ core is loaded, either per-op path)."""
    from accel_neuron.emulator import native

    return native.load()


def _pair(dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.tensor([[0, 1], [2, 3]], dtype=dtype, device="neuron")
    return t, t._lazy_clone()


def _one(dtype: torch.dtype) -> torch.Tensor:
    return torch.ones(1, dtype=dtype, device="neuron")


def _counts() -> tuple[int, int]:
    """Bytes allocated and allocations made on neuron:0 (a copy-on-write clone makes neither)."""
    gc.collect()
    return torch.neuron.memory_allocated(), torch.neuron.memory_stats()["allocation.all.allocated"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_lazy_clone_shares_the_memory_until_each_is_written(dtype: torch.dtype) -> None:
    t = torch.tensor([[0, 1], [2, 3]], dtype=dtype, device="neuron")
    expected = t.cpu()
    origin = _address(t)
    clone = t._lazy_clone()
    view = t.view([4])
    if not _copy_on_write():
        assert not _cow(t) and not _cow(clone) and _address(clone) != origin
    else:
        assert _cow(t) and _cow(view) and _cow(clone)
        assert _address(clone) == _address(view) == origin
        assert clone.untyped_storage()._cdata != t.untyped_storage()._cdata
    view += _one(dtype)  # the original (through its view) gets memory of its own; the clone keeps the old
    written = expected.clone()
    written.view(4).add_(torch.ones(1, dtype=dtype))  # the CPU's values
    assert torch.equal(clone.cpu(), expected) and torch.equal(t.cpu(), written)
    assert not _cow(t) and not _cow(view) and _address(t) == _address(view) != _address(clone)
    if _copy_on_write():
        assert _cow(clone) and _address(clone) == origin
    clone += _one(dtype)  # the last reference takes the shared memory back: no copy
    assert not _cow(clone) and torch.equal(clone.cpu(), written)
    if _copy_on_write():
        assert _address(clone) == origin


@pytest.mark.parametrize(
    "read",
    [
        lambda a, b: a + b,
        lambda a, b: torch.mul(a, b, out=torch.empty(2, 2, device="neuron")),
        lambda a, b: (a.sum(), b.cpu(), b.to(torch.float64), a[0], b.clone(), a.tolist()),
        lambda a, b: torch.empty(2, 2, device="neuron").copy_(a),
        lambda a, b: a.untyped_storage().cpu(),
    ],
    ids=["binary", "out_elsewhere", "reductions_and_copies", "copy_from", "storage_to_cpu"],
)
def test_reads_leave_both_copy_on_write(read) -> None:
    t, clone = _pair()
    read(t, clone)
    assert _cow(t) == _cow(clone) == _copy_on_write()


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x.add_(1),  # the compiled path's typed kernel
        lambda x: x.uniform_(),  # random: the Python kernel
        lambda x: torch.add(x, 1, out=x),
        lambda x: x.copy_(torch.zeros(2, 2)),
        lambda x: x.index_put_((torch.tensor([0]),), torch.tensor(5.0)),
        lambda x: x.t().mul_(2),
        lambda x: x.data_ptr(),  # c10's mutable access, as on the CPU
        lambda x: x.untyped_storage()[0:4],  # a storage slice may be written: the CPU materializes too
    ],
    ids=["inplace", "random", "out", "copy_to", "index_put", "view_inplace", "data_ptr", "storage_slice"],
)
@pytest.mark.parametrize("which", [0, 1], ids=["original", "clone"])
def test_every_write_materializes_only_the_written_tensor(write, which: int) -> None:
    pair = _pair()
    other = pair[1 - which]
    before = other.cpu()
    write(pair[which])
    assert not _cow(pair[which]) and _cow(other) == _copy_on_write()
    assert torch.equal(other.cpu(), before)
    assert _address(pair[which]) != _address(other)


def test_memory_statistics_count_the_copy_once_and_the_free_once() -> None:
    base = _counts()
    t = torch.arange(256.0, device="neuron")  # 1 KiB
    made = _counts()
    assert made == (base[0] + 1024, base[1] + 1)
    clone = t._lazy_clone()
    lazy = 2 if not _copy_on_write() else 1  # without the C++ core: a copy at once
    assert _counts() == (base[0] + lazy * 1024, base[1] + lazy)
    clone.add_(1)  # materialized: the copy is an allocation
    assert _counts() == (base[0] + 2048, base[1] + 2)
    t.add_(1)  # the last reference: no copy
    assert _counts() == (base[0] + 2048, base[1] + 2)
    del t, clone
    assert _counts() == (base[0], base[1] + 2)


def test_the_shared_memory_is_freed_once_with_its_last_reference() -> None:
    base = _counts()
    t = torch.arange(256.0, device="neuron")
    clones = [t._lazy_clone() for _ in range(3)]
    del t
    clones.pop()
    assert _counts()[0] == base[0] + 1024 * (1 if _copy_on_write() else 2)
    del clones
    assert _counts()[0] == base[0]


def test_a_materialization_past_the_device_memory_raises_and_keeps_the_tensor() -> None:
    from accel_neuron.emulator import memory

    t, clone = _pair()
    saved = memory.capacity(), memory._capacity["source"]
    memory.configure(torch.neuron.memory_allocated(), "the test: a full device")
    try:
        if _copy_on_write():
            with pytest.raises(torch.OutOfMemoryError, match="neuron out of memory"):
                clone.add_(1)
            assert _cow(clone) and _cow(t)
    finally:
        memory.configure(*saved)
    clone.add_(1)
    assert clone.cpu().tolist() == [[1.0, 2.0], [3.0, 4.0]] and t.cpu().tolist() == [[0.0, 1.0], [2.0, 3.0]]


@pytest.mark.parametrize(
    "threads, parallel, skip_first", [(1, 1, False), (1, 1, True), (4, 4, True), (4, 2, False)]
)
def test_materializing_inside_parallel_for_is_refused_as_c10_refuses_it(
    threads, parallel, skip_first
) -> None:
    # torch._test_parallel_materialize asks for the tensor's mutable data in each iteration of
    # at::parallel_for (skip_first: not in the first, which runs alone when there is one iteration).
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        refused = _copy_on_write() and not (skip_first and parallel == 1)
        a = torch.tensor([[0, 1], [2, 3]], device="neuron")._lazy_clone()
        if refused:
            with pytest.raises(RuntimeError, match="Materializing a storage in the loop function"):
                torch._test_parallel_materialize(a, parallel, skip_first)
            assert _cow(a)
        else:
            torch._test_parallel_materialize(a, parallel, skip_first)
        torch._test_parallel_materialize(
            torch.tensor([[0, 1], [2, 3]], device="neuron"), parallel, skip_first
        )
    finally:
        torch.set_num_threads(saved)


def test_a_lazy_clone_keeps_geometry_and_gradients_and_resizes_apart() -> None:
    t = torch.arange(12.0, device="neuron").reshape(3, 4).t()[1:]  # not contiguous, storage offset 1
    clone = t._lazy_clone()
    assert clone.stride() == t.stride() and clone.storage_offset() == t.storage_offset()
    assert torch.equal(clone.cpu(), t.cpu())
    clone.untyped_storage().resize_(96)  # new memory for the clone's storage only
    assert not _cow(clone) and _cow(t) == _copy_on_write()
    assert torch.equal(t.cpu(), torch.arange(12.0).reshape(3, 4).t()[1:])
    x = torch.ones(3, device="neuron", requires_grad=True)
    x._lazy_clone().mul(2).sum().backward()
    assert x.grad.cpu().tolist() == [2.0, 2.0, 2.0]
    empty = torch.empty(0, device="neuron")._lazy_clone()
    assert empty.shape == (0,) and empty.device.type == "neuron"


def test_swapping_a_copy_on_write_storages_memory_takes_its_own_copy_along() -> None:
    base = _counts()[0]
    t, clone = _pair()
    other = torch.full((2, 2), 7.0, device="neuron")
    t.untyped_storage()._swap_data_ptr_(other.untyped_storage())  # c10 materializes both first
    assert not _cow(t) and _cow(clone) == _copy_on_write()
    assert t.cpu().tolist() == [[7.0, 7.0], [7.0, 7.0]] and other.cpu().tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert clone.cpu().tolist() == [[0.0, 1.0], [2.0, 3.0]]
    del t, other
    clone.add_(1)
    assert clone.cpu().tolist() == [[1.0, 2.0], [3.0, 4.0]] and _counts()[0] == base + 16
    del clone
    assert _counts()[0] == base


def test_swapping_the_last_reference_moves_the_shared_memorys_count_with_it() -> None:
    base = _counts()[0]
    t, clone = _pair()
    t.add_(1)  # the clone is the last reference to the shared memory now
    other = torch.full((2, 2), 7.0, device="neuron")
    # the clone takes the shared memory back (c10 materializes first), then the two swap
    clone.untyped_storage()._swap_data_ptr_(other.untyped_storage())
    assert clone.cpu().tolist() == [[7.0, 7.0], [7.0, 7.0]]
    assert other.cpu().tolist() == [[0.0, 1.0], [2.0, 3.0]]
    del clone
    assert _counts()[0] == base + 32  # t's and other's memory
    del other
    assert _counts()[0] == base + 16
    del t
    assert _counts()[0] == base
