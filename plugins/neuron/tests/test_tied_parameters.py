"""On stock torch 2.13, selecting neuron keeps tied and lazy parameters through ``.to()``.

Stock ``Module._apply`` builds one new Parameter per module for a PrivateUse1 device (c10
does not count PrivateUse1 as shallow-copy compatible with the CPU), so a GPT-2-style
``lm_head.weight = wte.weight`` trains two matrices on neuron. The plugin wraps
``Module._apply`` while neuron is selected (``accel_abstraction.module_apply``).
"""

from __future__ import annotations

import weakref

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


def test_to_keeps_each_parameter_object_as_cuda_does(neuron: torch.device) -> None:
    """``m.weight is p`` after ``m.to(neuron)``: a reference held across ``.to()`` (an optimizer made
    before it, transformers' tests) sees the moved parameter, with its attributes and gradient."""
    torch.manual_seed(0)
    model = TiedLM()
    held = dict(model.named_parameters())
    p = model.wte.weight
    p.hf_flag = "kept"  # type: ignore[attr-defined]
    p.grad = torch.ones_like(p)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    model.to(neuron)
    assert model.wte.weight is p and p.device.type == "neuron" and p.hf_flag == "kept"  # type: ignore[attr-defined]
    assert type(p) is nn.Parameter and p.requires_grad and p.grad.device.type == "neuron"
    assert all(model.get_parameter(name) is q for name, q in held.items())
    assert is_tied(model)
    before = p.detach().cpu().clone()
    opt.zero_grad()
    model(torch.randint(0, 64, (2, 8), device=neuron), torch.randint(0, 64, (2, 8), device=neuron)).backward()
    opt.step()  # the optimizer made before .to() trains the parameters on neuron
    assert p.device.type == "neuron" and not torch.equal(p.detach().cpu(), before)
    model.cpu()
    assert model.wte.weight is p and p.device.type == "cpu" and is_tied(model)


def test_lazy_parameters_keep_their_object_and_stay_lazy(neuron: torch.device) -> None:
    from tests.patches.tied_models import LazyNet

    model = LazyNet()
    lazy = model.net[0].weight
    model.to(neuron)
    assert model.net[0].weight is lazy and isinstance(lazy, nn.parameter.UninitializedParameter)
    assert lazy.device.type == "neuron"
    model(torch.randn(4, 5, device=neuron))
    assert model.net[0].weight.shape == (32, 5) and model.net[0].weight.device.type == "neuron"


def test_a_lazy_parameter_on_neuron_changes_dtype_and_stays_lazy(neuron: torch.device) -> None:
    # PyTorch's test_modules moves each lazy module with .to(device).to(dtype): the dtype change runs
    # _to_copy on an UninitializedParameter already on neuron, whose .shape raises by design (the
    # Python per-op path read it for its CPU view: ACCEL_NEURON_EMULATOR_HOT_PATH=python failed here)
    model = nn.LazyConv1d(3, 2).to(neuron).to(torch.float64)
    lazy = model.weight
    assert isinstance(lazy, nn.parameter.UninitializedParameter)
    assert (lazy.device.type, lazy.dtype) == ("neuron", torch.float64)
    out = model(torch.ones(2, 4, 5, device=neuron, dtype=torch.float64))
    assert out.shape == (2, 3, 4) and out.dtype == torch.float64
    assert model.weight.shape == (3, 4, 2) and model.weight.device.type == "neuron"


def test_a_parameter_torch_cannot_swap_is_replaced_as_stock_torch_does(neuron: torch.device) -> None:
    model = nn.Linear(3, 2)
    p = model.weight
    view = p[0]  # another reference to the parameter's tensor: torch refuses to swap it
    model.to(neuron)
    assert model.weight is not p and model.weight.device.type == "neuron" and p.device.type == "cpu"
    assert torch.equal(model.weight.detach().cpu(), p.detach()) and view.device.type == "cpu"


def test_a_weakly_referenced_parameter_is_replaced_and_a_trained_one_kept(neuron: torch.device) -> None:
    # module_apply swaps a parameter's tensor itself only where torch.utils.swap_tensors would accept it:
    # a weak reference makes torch refuse (replaced, as stock torch does); a parameter whose backward has
    # run keeps its object, gradient included
    model = nn.Linear(3, 2)
    p = model.weight
    watcher = weakref.ref(p)
    model.to(neuron)
    assert model.weight is not p and watcher() is p and p.device.type == "cpu"
    trained = nn.Linear(3, 2)
    trained(torch.ones(1, 3)).sum().backward()
    q, grad = trained.weight, trained.weight.grad.clone()
    trained.to(neuron)
    assert trained.weight is q and q.device.type == "neuron" and q.grad is not None
    assert q.grad.device.type == "neuron" and torch.equal(q.grad.cpu(), grad)
