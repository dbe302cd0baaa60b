"""accel_abstraction.module_apply: one converted object per shared tensor, lazy stays lazy, reversible.

Stock torch also splits tied weights on ``.to("meta")`` (meta is not shallow-copy compatible
with the CPU either), so the core's wrapper is tested here without any accelerator.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn

from accel_abstraction import module_apply
from tests.patches.tied_models import LazyNet, TiedLM, is_tied


def torchs_apply() -> bool:
    return nn.Module._apply.__module__ == "torch.nn.modules.module"


@pytest.fixture(autouse=True)
def nobody_else() -> Iterator[None]:
    """Pause requests left by earlier tests (selecting neuron turns the wrapper on)."""
    with module_apply.paused():
        yield


@pytest.fixture
def wrapped() -> Iterator[None]:
    module_apply.enable("test")
    yield
    module_apply.disable("test")


def test_stock_torch_unties_on_a_device_it_cannot_shallow_copy_into() -> None:
    assert torchs_apply()
    assert not is_tied(TiedLM().to("meta"))
    assert not isinstance(LazyNet().to("meta").net[0].weight, nn.UninitializedParameter)


def test_shared_tensors_convert_once_and_lazy_stays_lazy(wrapped: None) -> None:
    model = TiedLM()
    model.wte.weight.grad = torch.ones_like(model.wte.weight)
    model.to("meta")
    assert is_tied(model) and model.wte.weight.device.type == "meta"
    assert model.wte.weight.grad is not None and model.wte.weight.grad.device.type == "meta"
    model.to_empty(device="cpu")
    assert is_tied(model) and model.wte.weight.device.type == "cpu"
    lazy = LazyNet().to("meta", torch.float64)
    weight = lazy.net[0].weight
    assert isinstance(weight, nn.UninitializedParameter)
    assert (weight.device.type, weight.dtype) == ("meta", torch.float64)
    a, b = nn.Module(), nn.Module()
    a.register_buffer("table", torch.ones(2))
    b.register_buffer("table", a.table)
    nn.Sequential(a, b).to("meta")
    assert a.table is b.table


def test_in_place_conversions_are_left_to_torch(wrapped: None) -> None:
    model = TiedLM()
    before = list(model.parameters())
    model.double()  # CPU -> CPU: torch moves .data in place; identity kept as without the wrapper
    assert all(p is q for p, q in zip(model.parameters(), before, strict=True))
    assert model.wte.weight.dtype == torch.float64


def test_enabling_is_counted_per_owner_and_disabling_restores_torch() -> None:
    module_apply.enable("a")
    module_apply.enable("b")
    module_apply.enable("a")
    assert module_apply.owners() == ("a", "b") and not torchs_apply()
    module_apply.disable("a")
    assert module_apply.enabled() and not torchs_apply()
    module_apply.disable("b")
    module_apply.disable("b")  # unknown owner: nothing happens
    assert not module_apply.enabled() and torchs_apply()
