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
