"""``torch.compile`` on the emulated device: the ``neuron`` backend, and default inductor routed to it.

TorchNeuron compiles with ``torch.compile(backend="neuron")``. The emulator registers a
dynamo backend of that name which captures the graph as every backend does (dynamo, then
AOTAutograd: functionalization, joint forward/backward graph, partitioning) and runs the
captured forward and backward graphs op by op on the emulated device (``aot_eager``): the
capture path is exercised, and results equal eager neuron (itself bitwise the CPU).

Inductor cannot generate code for the device: with nothing registered for ``neuron`` it
fails (``KeyError: 'neuron'`` in ``get_device_op_overrides``), and registering the CPU's
C++ scheduling for it fails further on, because inductor's scheduler and code generators
test ``device.type == "cpu"``. So a graph that touches neuron tensors under default
``torch.compile(model)`` (inductor) goes through the ``neuron`` backend instead, with one
log line saying so; graphs on other devices still go to inductor.

Dynamo's device interface for ``neuron`` is registered too (streams, events, current device).
All of this happens on the first ``torch.compile`` call, when dynamo is imported anyway (or
at install, when dynamo is already imported).
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import Any

import torch

from . import devices

log = logging.getLogger("accel_neuron.emulator")

BACKEND_NAME = "neuron"

_state = {"registered": False, "routed_logged": False}


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Any:
    """The ``neuron`` dynamo backend: AOTAutograd capture, graphs run on the emulated device."""
    from torch._dynamo.backends.debugging import aot_eager

    return aot_eager(gm, example_inputs)


def _probe(t: torch.Tensor | None) -> torch.Tensor | None:
    """A CPU view of neuron tensor `t` that the CPU kernel chooser sees as the CPU would (grad flag too)."""
    if t is None or t.device.type != "neuron":
        return t
    from . import storage

    c = storage.active().fresh_cpu_view(t)
    return c.requires_grad_(True) if t.requires_grad else c


def sdp_choice(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None,
    dropout_p: float,
    is_causal: bool,
    scale: float | None,
    enable_gqa: bool,
) -> int:
    """The attention kernel the CPU would pick for these inputs (``aten._fused_sdp_choice``).

    On real neuron tensors the CPU kernel answers through the fallback. While a graph is
    traced (fake, functional or proxy tensors), ``_fused_sdp_choice`` reaches the meta kernel,
    which always answers "math" where the CPU picks its flash kernel, and the compiled graph
    would stop matching eager: there, the CPU kernel is asked about real CPU stand-ins of
    the same geometry, dtype and ``requires_grad`` (shapes made concrete). Used by the Python
    per-op path's ``_sdpa``; the compiled path asks the CPU chooser in C++ (``csrc/sdpa.cpp``).
    """
    tensors = (query, key, value, attn_mask)
    if all(t is None or type(t) is torch.Tensor for t in tensors):
        # Through the fallback the chooser would see CPU views without requires_grad and could
        # choose differently from the CPU when gradients are needed: ask it about CPU views that
        # carry the flags (zero-copy).
        return torch.ops.aten._fused_sdp_choice(
            *(_probe(t) for t in tensors), dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa
        )
    from torch.utils._python_dispatch import _disable_current_modes

    def stand_in(t: torch.Tensor | None) -> torch.Tensor | None:
        if t is None:
            return None
        size = [int(s) for s in t.shape]
        stride = [int(s) for s in t.stride()]
        return torch.empty_strided(size, stride, dtype=t.dtype).requires_grad_(t.requires_grad)

    with _disable_current_modes():
        q, k, v, m = (stand_in(t) for t in tensors)
        return int(
            torch.ops.aten._fused_sdp_choice(
                q, k, v, m, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa
            )
        )


def _touches_neuron(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> bool:
    for t in example_inputs:
        if isinstance(t, torch.Tensor) and t.device.type == "neuron":
            return True
    for node in gm.graph.nodes:
        val = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(val, torch.Tensor) and val.device.type == "neuron":
            return True
    return False


def _device_interface() -> type:
    from torch._dynamo.device_interface import CpuInterface, DeviceInterface

    mod = torch.neuron  # type: ignore[attr-defined]

    class NeuronInterface(DeviceInterface):
        """Dynamo's view of the emulated device (synchronous; kernels run on the CPU)."""

        device = mod.device
        Event = mod.Event
        Stream = mod.Stream

        class Worker(CpuInterface.Worker):  # properties for compiler heuristics: the host CPU's
            @staticmethod
            def set_device(device: int) -> None:
                mod.set_device(device)

            @staticmethod
            def current_device() -> int:
                return devices.current()

        current_device = staticmethod(mod.current_device)
        set_device = staticmethod(mod.set_device)
        exchange_device = staticmethod(mod._exchange_device)
        maybe_exchange_device = staticmethod(mod._maybe_exchange_device)
        device_count = staticmethod(mod.device_count)
        is_available = staticmethod(mod.is_available)
        stream = staticmethod(mod.stream)
        current_stream = staticmethod(mod.current_stream)
        set_stream = staticmethod(mod.set_stream)
        synchronize = staticmethod(mod.synchronize)
        memory_allocated = staticmethod(mod.memory_allocated)

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return 0

        @staticmethod
        def get_compute_capability(device: Any = None) -> str:
            return ""

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return True

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:
            return False

    return NeuronInterface


def register() -> None:
    """Register dynamo's device interface and the ``neuron`` backend (idempotent; imports dynamo)."""
    if _state["registered"]:
        return
    from torch._dynamo import list_backends, register_backend
    from torch._dynamo.device_interface import register_interface_for_device

    interface = _device_interface()
    register_interface_for_device("neuron", interface)
    for i in range(devices.count()):
        register_interface_for_device(f"neuron:{i}", interface)
    if BACKEND_NAME not in list_backends(exclude_tags=()):
        register_backend(compiler_fn=neuron_backend, name=BACKEND_NAME)
    _state["registered"] = True


def _route_inductor(original: Any) -> Any:
    @functools.wraps(original)
    def __call__(self: Any, model_: torch.fx.GraphModule, inputs_: list[Any]) -> Any:
        if _touches_neuron(model_, inputs_):
            if not _state["routed_logged"]:
                _state["routed_logged"] = True
                log.warning(
                    "torch.compile: inductor cannot generate code for the emulated neuron device; graphs "
                    "on neuron tensors run through the emulator's '%s' backend (AOTAutograd, eager neuron "
                    "kernels). Say so explicitly with torch.compile(model, backend=accel.capabilities().compile_backend).",
                    BACKEND_NAME,
                )
            return neuron_backend(model_, inputs_)
        return original(self, model_, inputs_)

    return __call__


def patch() -> None:
    """Hook ``torch.compile`` (register on first use) and route inductor's neuron graphs (once)."""
    if getattr(torch.compile, "_accel_neuron_emulator", False):
        return
    original_compile = torch.compile

    @functools.wraps(original_compile)
    def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - the name users call
        register()
        return original_compile(*args, **kwargs)

    compile._accel_neuron_emulator = True  # type: ignore[attr-defined]
    torch.compile = compile  # type: ignore[assignment]
    wrapper = torch._TorchCompileInductorWrapper
    wrapper.__call__ = _route_inductor(wrapper.__call__)  # type: ignore[method-assign]
    if "torch._dynamo" in sys.modules:  # already paid for: register now, not at the first compile
        register()
