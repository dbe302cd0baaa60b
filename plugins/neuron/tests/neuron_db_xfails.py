"""The reviewed expected failures of emulated neuron against the CPU on PyTorch's op_db / module_db.

One table per database. Each entry names the phase that fails ("forward" or
"backward"; a forward failure also leaves backward untested), why, and what the
failure must look like (`raises`: a substring of the neuron-side error, so an
entry for a clear error cannot hide another failure). An entry whose `applies()`
is False (the limit has been lifted in this process) is ignored; an entry that
applies but whose phase passes fails the test: delete the entry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch


@dataclasses.dataclass(frozen=True)
class Expected:
    """An expected failure: the phase, the reason, and the error it must show (if it raises)."""

    phase: str
    reason: str
    raises: str | None = None
    applies: Callable[[], bool] = lambda: True


_SPARSE = (
    "sparse tensors are an emulator limit: the emulated device holds dense tensors only and "
    "raises EmulatorError naming the op and layout"
)


def _lazy_params_lost_on_to() -> bool:
    """True while ``Module.to('neuron')`` turns a lazy module's uninitialized parameters into plain ones.

    Asked per test, not cached: selecting the neuron backend switches on the fix
    (``accel_abstraction.module_apply``), and other tests switch it on and off.
    """
    m = torch.nn.LazyLinear(2)
    m.to("neuron")
    return not isinstance(m.weight, torch.nn.parameter.UninitializedParameter)


_LAZY = (
    "Module._apply makes new Parameters on PrivateUse1 (c10 has_compatible_shallow_copy_type), so "
    "lazy parameters stop being lazy after .to('neuron') in stock torch; accel_abstraction.module_apply "
    "(enabled when the neuron backend is selected) keeps them, and then these modules pass"
)

# (OpInfo id as in the test ids, dtype) -> expected failure.
OPS: dict[tuple[str, torch.dtype], Expected] = {
    ("to_sparse", torch.float32): Expected("forward", _SPARSE, raises="EmulatorError"),
    ("sparse.sampled_addmm", torch.float32): Expected("forward", _SPARSE, raises="EmulatorError"),
    ("sparse.mm.reduce", torch.float32): Expected("forward", _SPARSE, raises="EmulatorError"),
    ("to_sparse", torch.bfloat16): Expected("forward", _SPARSE, raises="EmulatorError"),
    ("sparse.mm.reduce", torch.bfloat16): Expected("forward", _SPARSE, raises="EmulatorError"),
}

# (ModuleInfo name, dtype) -> expected failure.
MODULES: dict[tuple[str, torch.dtype], Expected] = {
    (name, dtype): Expected(
        "forward",
        _LAZY,
        raises="weight should have at least three dimensions",
        applies=_lazy_params_lost_on_to,
    )
    for name in (
        "nn.LazyConv1d",
        "nn.LazyConv2d",
        "nn.LazyConv3d",
        "nn.LazyConvTranspose1d",
        "nn.LazyConvTranspose2d",
        "nn.LazyConvTranspose3d",
    )
    for dtype in (torch.float32, torch.bfloat16)
}


def verdict(name: str, outcome: object, expected: Expected | None) -> tuple[list[str], list[str]]:
    """(failures, expected failures) of one op/module's `outcome` (a harness ``Outcome``) under its entry."""
    if expected is not None and not expected.applies():
        expected = None
    failures: list[str] = []
    xfails: list[str] = []
    for phase in ("forward", "backward"):
        status = getattr(outcome, phase)
        msg = getattr(outcome, phase + "_msg")
        if expected is not None and expected.phase == phase:
            if status != "fail":
                failures.append(
                    f"{name} {phase}: expected to fail ({expected.reason}) but is '{status}' now; "
                    "delete its entry in neuron_db_xfails.py"
                )
            elif expected.raises is not None and expected.raises not in msg:
                failures.append(
                    f"{name} {phase}: fails differently than expected ({expected.raises!r}): {msg}"
                )
            else:
                xfails.append(f"{phase}: {expected.reason}")
        elif status == "fail":
            failures.append(f"{name} {phase} differs from the CPU: {msg}")
    return failures, xfails
