"""Redirects for ``torch.backends.cudnn`` flags: they drive the backend's own knobs.

Assigning ``torch.backends.cudnn.deterministic``, ``.benchmark`` or ``.allow_tf32`` still
sets the cuDNN flag (reading it back gives what was set) and also calls the backend's
``set_deterministic(flag, warn_only=True)``, ``set_benchmark(flag)`` or
``set_allow_tf32(flag)``. ``warn_only=True``: the cuDNN flag never made an operation
without a deterministic kernel raise, so the redirected one only warns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..porting.mapping import hint_for
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
        hint = hint_for(api)
        rec.describe(api, "knobs", hint)
        out.append(Redirect(cls, name, _Flag(original, api, apply, rec.hit), "knobs", api, hint, record=False))
    return out
