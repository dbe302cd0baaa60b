"""The loss-scaling defaults, written once (they are ``torch.amp.GradScaler``'s own).

``accel.GradScaler``, :meth:`Backend.GradScaler` and the redirected ``torch.amp.GradScaler`` /
``torch.cuda.amp.GradScaler`` all take these as their defaults. No torch import here: the
public module's signatures use them before torch is loaded.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["SCALER"]


class _ScalerDefaults(NamedTuple):
    init_scale: float = 2.0**16
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000


SCALER = _ScalerDefaults()
