"""``torch.UntypedStorage(n, device="neuron")`` (what ``copy.deepcopy`` and storage ``clone()`` of a neuron
tensor call) on the compiled per-op path: one call of the C++ core's ``new_storage`` op, which takes
new host memory over as a neuron storage of device `index`, counted in that device's memory statistics
to the byte and uncounted when the storage goes, as every other neuron allocation."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron_emulator")


def test_the_core_makes_a_new_storage_counted_on_its_device(compiled) -> None:
    index = torch.neuron.device_count() - 1
    before = torch.neuron.memory_allocated(index)
    holder = torch.ops.accel_neuron_emu.new_storage(96, index)
    assert (holder.device, holder.dtype, holder.shape) == (torch.device("neuron", index), torch.uint8, (96,))
    st = holder.untyped_storage()
    assert st.nbytes() == 96 and not st.resizable()
    assert torch.neuron.memory_allocated(index) == before + 96
    holder.copy_(torch.arange(96, dtype=torch.uint8).to(holder.device))
    assert torch.equal(holder.cpu(), torch.arange(96, dtype=torch.uint8))
    del holder, st
    assert torch.neuron.memory_allocated(index) == before


def test_an_untyped_storage_of_n_bytes_is_the_cores_new_storage(compiled, monkeypatch) -> None:
    from accel_neuron.emulator import storage

    made = []
    path = storage.active()

    def spy(nbytes: int, index: int) -> torch.UntypedStorage:
        made.append((nbytes, index))
        return path.new_storage(nbytes, index)

    monkeypatch.setattr(storage, "_active", dataclasses.replace(path, new_storage=spy))
    st = torch.UntypedStorage(40, device="neuron")
    assert (st.device, st.nbytes()) == (torch.device("neuron", 0), 40)
    assert made == [(40, 0)]


def test_a_deepcopy_of_a_neuron_tensor_counts_its_bytes_and_copies_its_values(compiled) -> None:
    x = torch.randn(4, 5).to("neuron")
    before = torch.neuron.memory_allocated()
    y = copy.deepcopy(x)
    assert torch.neuron.memory_allocated() == before + 80
    assert y.device == x.device and y.data_ptr() != x.data_ptr()
    assert torch.equal(y.cpu(), x.cpu())
    del y
    assert torch.neuron.memory_allocated() == before


def test_a_neuron_storages_clone_is_one_call_of_the_core(compiled) -> None:
    # copy.deepcopy of each neuron tensor clones its storage: one call, not a new storage then a copy_
    # (two empty tensors, two set_ and a copy through the device's kernels).
    from accel_neuron.emulator import native

    index = torch.neuron.device_count() - 1
    x = torch.arange(24, dtype=torch.float32).to(f"neuron:{index}")
    st = x.untyped_storage()
    before, calls = torch.neuron.memory_allocated(index), native.path_counts()
    clone = st.clone()
    assert native.path_counts() == calls  # no device op ran
    assert (type(clone), clone.device, clone.nbytes()) == (torch.UntypedStorage, x.device, 96)
    assert clone.data_ptr() != st.data_ptr()
    assert torch.neuron.memory_allocated(index) == before + 96
    copied = torch.empty(0, device=x.device).set_(clone, 0, (24,), (1,))
    assert torch.equal(copied.cpu(), torch.arange(24, dtype=torch.float32))
    x.add_(1)  # the clone has memory of its own
    assert torch.equal(copied.cpu(), torch.arange(24, dtype=torch.float32))
    del copied, clone
    assert torch.neuron.memory_allocated(index) == before


def test_a_clone_of_a_copy_on_write_storage_reads_it_and_leaves_it_shared(compiled) -> None:
    x = torch.randn(8).to("neuron")
    lazy = x._lazy_clone()
    clone = lazy.untyped_storage().clone()
    assert torch._C._is_cow_tensor(lazy) and torch._C._is_cow_tensor(x)  # a read: nothing materialized
    copied = torch.empty(0, device="neuron").set_(clone, 0, (8,), (1,))
    assert torch.equal(copied.cpu(), x.cpu())
