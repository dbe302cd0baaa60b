"""The loss-scaling defaults are written once, and they are torch's own."""

from __future__ import annotations

import inspect

import torch

import accel_abstraction as accel
from accel_abstraction.interface import Backend
from accel_abstraction.scaler_defaults import SCALER


def test_the_defaults_are_torchs_and_every_signature_uses_them() -> None:
    torch_sig = inspect.signature(torch.amp.GradScaler.__init__)
    assert {k: torch_sig.parameters[k].default for k in SCALER._fields} == SCALER._asdict()
    for fn in (accel.GradScaler, Backend.GradScaler):
        params = inspect.signature(fn).parameters
        assert {k: params[k].default for k in SCALER._fields} == SCALER._asdict(), fn
