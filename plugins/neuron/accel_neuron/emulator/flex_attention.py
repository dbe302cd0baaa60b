"""Flex attention on the emulated device with a stock torch.

``torch.nn.attention.flex_attention`` checks the device against a fixed list (cuda, cpu,
xpu, hpu, mps) and refuses every PrivateUse1 backend with "FlexAttention is only supported
on CUDA, CPU, HPU, or MPS devices", though nothing else in it is tied to those devices:
eagerly it runs the dense reference implementation with ordinary ATen ops, and under
``torch.compile`` its higher-order op reaches the device's compile backend (``neuron``,
``compile.py``). Patch 0015 of ``patches/pytorch/2.13.0`` fixes the list upstream-style;
until a torch with it is installed, the emulator lets ``neuron`` tensors through the
check when the module is imported (or at install, if it already was). Other devices get
torch's own check unchanged, and with the patch applied this is a no-op.

The module is not imported for this (it costs ~30 ms): a one-shot import hook patches it
when user code imports it.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

_MODULE = "torch.nn.attention.flex_attention"


def _accept_neuron(module: Any) -> None:
    original = module._validate_device
    if getattr(original, "_accepts_neuron", False):
        return

    def _validate_device(query: Any, key: Any, value: Any) -> None:
        if query.device.type == "neuron":
            return  # the emulated device runs flex attention eagerly and through its compile backend
        original(query, key, value)

    _validate_device._accepts_neuron = True  # type: ignore[attr-defined]
    _validate_device.__doc__ = original.__doc__
    module._validate_device = _validate_device


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of the flex attention module once, then leaves."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_patch(module: Any) -> None:
            exec_module(module)
            _accept_neuron(module)

        loader.exec_module = exec_then_patch  # type: ignore[method-assign]
        return spec


def patch() -> None:
    """Let neuron tensors through flex attention's device check, now or when the module is imported."""
    module = sys.modules.get(_MODULE)
    if module is not None:
        _accept_neuron(module)
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
