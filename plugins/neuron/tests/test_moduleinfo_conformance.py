"""Emulated neuron against the CPU, bit for bit, on PyTorch's own module database (module_db).

Every ModuleInfo, in training mode (and in eval mode where the two differ): the module
built on the CPU and moved with ``.to("neuron")`` (with ``accel_abstraction.module_apply`` on, as
when the neuron backend is selected: lazy modules stay lazy), forward, then backward to the inputs
and every parameter. Up to ``neuron_db_harness.MODULE_INPUTS`` inputs per module, spread
over its input list. The bfloat16 leg is labelled slow. Expected failures, each with its
reason, live in ``neuron_db_xfails.MODULES``.
"""

from __future__ import annotations

import neuron_db_harness as harness
import pytest
import torch
from neuron_db_xfails import MODULES, verdict

# the conformance tier (conftest.py at the repository root; docs/testing.md)
pytestmark = pytest.mark.conformance

_CASES = [
    pytest.param(info, training, id=f"{info.name}-{'train' if training else 'eval'}")
    for info in harness.module_db()
    for training in ((True, False) if info.train_and_eval_differ else (True,))
]

harness.unfreeze_backend_flags()


@pytest.fixture(scope="module", autouse=True)
def _module_conversion_as_with_accel():
    """Module.to('neuron') as a user of the neuron backend gets it: tied and lazy parameters kept."""
    from accel_abstraction import module_apply

    module_apply.enable("test_moduleinfo_conformance")
    yield
    module_apply.disable("test_moduleinfo_conformance")


def _check(info, training: bool, dtype: torch.dtype) -> None:
    outcome = harness.check_module(info, dtype, training)
    expected = MODULES.get((info.name, dtype))
    if outcome.forward == harness.NOT_COMPARABLE and expected is None:
        pytest.skip(f"not comparable: no {dtype} input the CPU accepts")
    failures, xfails = verdict(info.name, outcome, expected)
    if failures:
        pytest.fail("\n".join(failures))
    if xfails:
        pytest.xfail("; ".join(xfails))


@pytest.mark.parametrize(("info", "training"), _CASES)
def test_module_float32_matches_cpu(neuron_emulator, info, training: bool) -> None:
    _check(info, training, torch.float32)


@pytest.mark.slow
@pytest.mark.parametrize(("info", "training"), _CASES)
def test_module_bfloat16_matches_cpu(neuron_emulator, info, training: bool) -> None:
    _check(info, training, torch.bfloat16)
