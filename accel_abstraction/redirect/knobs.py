"""Redirects for ``torch.backends.cudnn`` / ``torch.backends.cuda`` flags: they drive the backend's own knobs.

Assigning ``torch.backends.cudnn.deterministic``, ``.benchmark`` or ``.allow_tf32`` still
sets the cuDNN flag (reading it back gives what was set) and also calls the backend's
``set_deterministic(flag, warn_only=True)``, ``set_benchmark(flag)`` or
``set_allow_tf32(flag)``. ``warn_only=True``: the cuDNN flag never made an operation
without a deterministic kernel raise, so the redirected one only warns.
``torch.backends.cuda.matmul.allow_tf32 = flag`` likewise calls ``set_allow_tf32(flag)``.
The scaled-dot-product-attention switches (``sdp_kernel``, ``enable_flash_sdp``, ...) set
process-wide flags that every device's attention kernel choice reads: torch serves them,
the report lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .hints import port_hint
from .serve import Server
from .spec import Redirect

__all__ = ["knob_redirects"]


class _Flag:
    """A data descriptor that keeps the original flag and forwards each assignment to the backend."""

    def __init__(self, original: Any, api: str, apply: Callable[[bool], None], hit: Callable[..., Any]) -> None:
        self.original = original
        self.api = api
        self.apply = apply
        self.hit = hit

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self.original.__get__(obj, objtype)

    def __set__(self, obj: Any, value: Any) -> None:
        self.hit(self.api)
        self.original.__set__(obj, value)
        self.apply(bool(value))


def knob_redirects(s: Server) -> list[Redirect]:
    b = s.backend
    rec = s.recorder
    cls = type(torch.backends.cudnn)
    knobs: dict[str, Callable[[bool], None]] = {
        "deterministic": lambda flag: b.set_deterministic(flag, True),
        "benchmark": b.set_benchmark,
        "allow_tf32": b.set_allow_tf32,
    }
    out = []
    for name, apply in knobs.items():
        original = vars(cls).get(name)
        if original is None or not hasattr(original, "__set__"):
            continue
        api = f"torch.backends.cudnn.{name}"
        hint = port_hint(api)
        rec.describe(api, "knobs", hint)
        out.append(Redirect(cls, name, _Flag(original, api, apply, rec.hit), "knobs", api, hint, record=False))
    out.append(_matmul_tf32(s))
    out.extend(_sdp(s))
    return out


def _matmul_tf32(s: Server) -> Redirect:
    """``torch.backends.cuda.matmul.allow_tf32 = flag``: sets the flag and ``backend.set_allow_tf32(flag)``."""
    b = s.backend
    rec = s.recorder
    cls = type(torch.backends.cuda.matmul)
    original = cls.__setattr__
    api = "torch.backends.cuda.matmul.allow_tf32"
    hint = port_hint(api)
    rec.describe(api, "knobs", hint)

    def __setattr__(self: Any, name: str, value: Any) -> None:  # noqa: N807
        original(self, name, value)
        if name == "allow_tf32":
            rec.hit(api)
            b.set_allow_tf32(bool(value))

    return Redirect(cls, "__setattr__", __setattr__, "knobs", api, hint, record=False)


#: ``torch.backends.cuda`` functions choosing scaled-dot-product-attention kernels. The
#: flags are process-wide and also steer the CPU's kernel choice, so they are served by
#: torch itself; the redirect reports them.
_SDP = ("sdp_kernel", "enable_flash_sdp", "enable_mem_efficient_sdp", "enable_math_sdp", "enable_cudnn_sdp")


def _sdp(s: Server) -> list[Redirect]:
    impls = {name: getattr(torch.backends.cuda, name) for name in _SDP if hasattr(torch.backends.cuda, name)}
    return s.redirects(torch.backends.cuda, "torch.backends.cuda", impls, "knobs", port_hint("torch.backends.cuda.sdp_kernel"))
