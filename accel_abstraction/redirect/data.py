"""``DataLoader(pin_memory=True)`` served by the selected backend.

Where the backend has pinned memory, the loader pins for the backend's device
(``pin_memory_device=backend.pin_memory_device()`` unless the script names one); where it
has none (cpu, the emulated neuron device), pinning is turned off (it only speeds up
host-to-device copies) and the site is reported as ``no-op``, instead of torch warning
that no accelerator is found, or failing in its pinning thread.
"""

from __future__ import annotations

import functools
from typing import Any

from .hints import port_hint
from .serve import Server
from .sites import NOOP
from .spec import Redirect

__all__ = ["data_redirects"]


def data_redirects(s: Server) -> list[Redirect]:
    from torch.utils.data import DataLoader

    b = s.backend
    rec = s.recorder
    pinned = b.capabilities().supports("pinned_memory")
    original = DataLoader.__init__
    api = "DataLoader(pin_memory=True)"
    hint = port_hint(api)
    rec.describe(api, "data", hint)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        if kwargs.get("pin_memory"):
            key = rec.hit(api)
            if key is not None:
                if not pinned:
                    kwargs["pin_memory"] = False
                    rec.mark(key, NOOP)
                elif not kwargs.get("pin_memory_device"):
                    kwargs["pin_memory_device"] = b.pin_memory_device()
        original(self, *args, **kwargs)

    functools.update_wrapper(__init__, original)
    return [Redirect(DataLoader, "__init__", __init__, "data", api, hint, record=False)]
