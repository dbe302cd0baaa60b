"""On stock torch 2.13, selecting neuron keeps tied and lazy parameters through ``.to()``.

Stock ``Module._apply`` builds one new Parameter per module for a PrivateUse1 device (c10
does not count PrivateUse1 as shallow-copy compatible with the CPU), so a GPT-2-style
``lm_head.weight = wte.weight`` trains two matrices on neuron. The plugin wraps
``Module._apply`` while neuron is selected (``accel_abstraction.module_apply``).
"""

from __future__ import annotations

import pytest
import torch
from accel_neuron.plugin import OWNER
from torch import nn

import accel_abstraction as accel
from accel_abstraction import info, module_apply
from tests.patches.tied_models import TiedLM, is_tied, train_lazy, train_tied_lm


def torchs_apply() -> bool:
    """``Module._apply`` is torch's own (another test may have left the wrapper on before this module)."""
    return nn.Module._apply.__module__ == "torch.nn.modules.module"


@pytest.fixture
def neuron(neuron_selected: torch.device) -> torch.device:
    return neuron_selected


def test_stock_torch_unties_and_the_selected_backend_keeps_the_tie(neuron: torch.device) -> None:
    module_apply.disable(OWNER)  # what stock torch does: the control
    assert not is_tied(TiedLM().to(neuron))
    module_apply.enable(OWNER)
    model = TiedLM()
    grad = torch.ones_like(model.wte.weight)
    model.wte.weight.grad = grad
    model.to(neuron)
    assert is_tied(model)
    assert model.wte.weight.device.type == "neuron"
    assert torch.equal(model.wte.weight.grad.cpu(), grad)
    assert model.wte.weight in set(model.parameters()) and len(list(model.parameters())) == len(
        list(TiedLM().parameters())
    )
    model.cpu()  # and back: neuron -> cpu is a non-compatible conversion too
    assert is_tied(model) and model.wte.weight.device.type == "cpu"


def test_tied_lm_trains_bitwise_like_the_cpu(neuron: torch.device) -> None:
    cpu = train_tied_lm("cpu")
    dev = train_tied_lm(neuron)
    assert bool(dev["tied"]) and bool(cpu["tied"])
    assert int(dev["parameters"]) == int(cpu["parameters"])
    for name, value in cpu.items():
        assert torch.equal(dev[name], value), name


def test_lazy_modules_stay_lazy_and_train_like_the_cpu(neuron: torch.device) -> None:
    cpu = train_lazy("cpu")
    dev = train_lazy(neuron)
    assert bool(dev["lazy_after_to"])
    for name, value in cpu.items():
        assert torch.equal(dev[name], value), name


def test_another_backend_restores_torchs_module_apply(neuron: torch.device) -> None:
    assert not torchs_apply()
    with accel.using("cpu"):
        assert torchs_apply()
        assert module_apply.owners() == ()
    assert module_apply.owners() == (OWNER,)
    assert is_tied(TiedLM().to(neuron))
    module_apply.disable(OWNER)
    assert torchs_apply()


def test_the_setting_turns_it_off(neuron: torch.device, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_NEURON_KEEP_TIED_PARAMETERS", "0")
    accel.use("neuron")
    assert torchs_apply()
    assert dict(info.collect()["environment"])["module .to()"].startswith("as torch ships it")


def test_accel_info_says_so(neuron: torch.device) -> None:
    rows = dict(info.collect()["environment"])
    assert rows["module .to()"] == "keeps tied and lazy parameters (Module._apply wrapped by accel-neuron)"
