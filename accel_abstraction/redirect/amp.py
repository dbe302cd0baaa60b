"""Redirects for mixed precision: ``torch.autocast("cuda")``, ``torch.cuda.amp.*``, ``GradScaler("cuda")``.

* ``torch.autocast`` / ``torch.amp.autocast`` with a CUDA ``device_type`` return the
  backend's ``autocast`` (its device and, when no ``dtype`` is given, its AMP dtype);
  other device types get the real ``torch.autocast``. A function, not a subclass, so
  torch.compile sees the real autocast object.
* ``torch.cuda.amp.autocast(...)``: its CUDA default dtype (float16) is not an explicit
  choice, so ``dtype=None`` there means the backend's AMP dtype; an explicit dtype is kept.
* ``torch.amp.GradScaler("cuda")`` (also ``torch.GradScaler``) and
  ``torch.cuda.amp.GradScaler()`` stay classes (subclasses of ``torch.amp.GradScaler``,
  so ``isinstance`` and subclassing keep working) on the backend's device. Unless
  ``enabled`` is given, loss scaling is enabled as ``backend.GradScaler()`` decides (on
  when the AMP dtype is float16; off for bfloat16, where it is not needed).
* ``torch.cuda.amp.custom_fwd`` / ``custom_bwd``: ``torch.amp.custom_fwd`` for the backend.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch

from ..scaler_defaults import SCALER
from .hints import port_hint
from .serve import Server
from .spec import Redirect

__all__ = ["amp_redirects"]


def amp_redirects(s: Server) -> list[Redirect]:
    b = s.backend
    t = s.translator
    rec = s.recorder
    out: list[Redirect] = []
    real_autocast = torch.amp.autocast_mode.autocast
    real_scaler = torch.amp.GradScaler

    def add(target: Any, name: str, replacement: Any, api: str, hint: str) -> None:
        rec.describe(api, "amp", hint)
        out.append(Redirect(target, name, replacement, "amp", api, hint, record=False))

    # ---------------------------------------------------------------- autocast
    def autocast(device_type: str, dtype: torch.dtype | None = None, enabled: bool = True, cache_enabled: bool | None = None) -> Any:
        if t.names_cuda(device_type):
            rec.hit('torch.autocast("cuda")')
            return b.autocast(dtype, enabled, cache_enabled)
        return real_autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    functools.update_wrapper(autocast, real_autocast, updated=())
    add(torch, "autocast", autocast, 'torch.autocast("cuda")', port_hint('torch.autocast("cuda")'))
    add(torch.amp, "autocast", autocast, 'torch.autocast("cuda")', port_hint('torch.autocast("cuda")'))

    def cuda_amp_autocast(enabled: bool = True, dtype: torch.dtype | None = None, cache_enabled: bool = True) -> Any:
        rec.hit("torch.cuda.amp.autocast")
        return b.autocast(dtype, enabled, cache_enabled)

    functools.update_wrapper(cuda_amp_autocast, torch.cuda.amp.autocast, updated=())
    add(torch.cuda.amp, "autocast", cuda_amp_autocast, "torch.cuda.amp.autocast", port_hint("torch.cuda.amp.autocast"))

    # ---------------------------------------------------------------- GradScaler
    def enabled_by_backend(init_scale: float, growth_factor: float, backoff_factor: float, growth_interval: int) -> bool:
        return bool(b.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, None).is_enabled())

    class GradScaler(real_scaler):  # type: ignore[misc, valid-type]
        __doc__ = real_scaler.__doc__
        _redirected_api = 'torch.amp.GradScaler("cuda")'

        def __init__(
            self,
            device: str = "cuda",
            init_scale: float = SCALER.init_scale,
            growth_factor: float = SCALER.growth_factor,
            backoff_factor: float = SCALER.backoff_factor,
            growth_interval: int = SCALER.growth_interval,
            enabled: bool | None = None,
        ) -> None:
            if t.names_cuda(device):
                rec.hit(self._redirected_api)
                device = b.device_type
                if enabled is None:
                    enabled = enabled_by_backend(init_scale, growth_factor, backoff_factor, growth_interval)
            elif enabled is None:
                enabled = True
            super().__init__(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    GradScaler.__module__, GradScaler.__qualname__ = real_scaler.__module__, real_scaler.__qualname__
    add(torch.amp, "GradScaler", GradScaler, 'torch.amp.GradScaler("cuda")', port_hint('torch.amp.GradScaler("cuda")'))
    if getattr(torch, "GradScaler", None) is real_scaler:
        add(torch, "GradScaler", GradScaler, 'torch.amp.GradScaler("cuda")', port_hint('torch.amp.GradScaler("cuda")'))

    # torch.cuda.amp.GradScaler(...) is torch.amp.GradScaler("cuda", ...) in torch too.
    class CudaAmpGradScaler(GradScaler):
        __doc__ = torch.cuda.amp.GradScaler.__doc__
        _redirected_api = "torch.cuda.amp.GradScaler"

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__("cuda", *args, **kwargs)

    signature = inspect.signature(GradScaler)
    CudaAmpGradScaler.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values() if p.name != "device"]
    )
    CudaAmpGradScaler.__module__ = "torch.cuda.amp"
    CudaAmpGradScaler.__name__ = CudaAmpGradScaler.__qualname__ = "GradScaler"
    add(torch.cuda.amp, "GradScaler", CudaAmpGradScaler, "torch.cuda.amp.GradScaler", port_hint("torch.cuda.amp.GradScaler"))

    # ---------------------------------------------------------------- custom_fwd / custom_bwd
    def custom_fwd(fwd: Any = None, *, cast_inputs: torch.dtype | None = None) -> Any:
        rec.hit("torch.cuda.amp.custom_fwd")
        return torch.amp.custom_fwd(fwd, device_type=b.device_type, cast_inputs=cast_inputs)

    def custom_bwd(bwd: Any = None) -> Any:
        rec.hit("torch.cuda.amp.custom_bwd")
        return torch.amp.custom_bwd(bwd, device_type=b.device_type)

    add(torch.cuda.amp, "custom_fwd", functools.wraps(torch.cuda.amp.custom_fwd)(custom_fwd),
        "torch.cuda.amp.custom_fwd", port_hint("torch.cuda.amp.custom_fwd"))  # fmt: skip
    add(torch.cuda.amp, "custom_bwd", functools.wraps(torch.cuda.amp.custom_bwd)(custom_bwd),
        "torch.cuda.amp.custom_bwd", port_hint("torch.cuda.amp.custom_bwd"))  # fmt: skip
    return out
