"""Resizing a neuron storage in place, as FSDP2 does to free and re-allocate unsharded parameters."""

from __future__ import annotations

import gc

import torch


def test_resize_to_zero_and_back_keeps_the_storage_object_and_its_views(neuron_emulator: torch.device) -> None:
    before = torch.neuron.memory_allocated()
    param = torch.nn.Parameter(torch.arange(6.0, device=neuron_emulator))
    view = param.view(2, 3)
    st = param.untyped_storage()
    assert torch.neuron.memory_allocated() == before + 24

    st.resize_(0)  # FSDP2's free_storage
    assert st.nbytes() == 0 and param.untyped_storage().nbytes() == 0
    assert torch.neuron.memory_allocated() == before

    st.resize_(24)  # FSDP2's alloc_storage, then the all-gather writes into it
    assert torch.neuron.memory_allocated() == before + 24
    with torch.no_grad():
        param.copy_(torch.arange(6.0) * 2)
    assert view.cpu().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert (view + 1).sum().item() == 36.0

    del param, view, st
    gc.collect()
    assert torch.neuron.memory_allocated() == before


def test_growing_keeps_the_old_bytes_and_cpu_storages_are_untouched(neuron_emulator: torch.device) -> None:
    t = torch.tensor([1.0, 2.0], device=neuron_emulator)
    t.untyped_storage().resize_(16)
    assert t.untyped_storage().nbytes() == 16 and t.cpu().tolist() == [1.0, 2.0]
    c = torch.ones(2)
    c.untyped_storage().resize_(16)  # PyTorch's own resize for CPU storages
    assert c.untyped_storage().nbytes() == 16 and c.tolist() == [1.0, 1.0]


def test_resize_on_the_second_device_stays_there(neuron_emulator: torch.device) -> None:
    if torch.neuron.device_count() < 2:
        import pytest

        pytest.skip("the emulator shows one device")
    t = torch.ones(4, device="neuron:1")
    before = torch.neuron.memory_allocated(1)
    st = t.untyped_storage()
    st.resize_(0)
    assert torch.neuron.memory_allocated(1) == before - 16
    st.resize_(16)
    t.fill_(3.0)
    assert t.device == torch.device("neuron:1") and t.untyped_storage().device == torch.device("neuron:1")
    assert torch.neuron.memory_allocated(1) == before and t.cpu().tolist() == [3.0] * 4
