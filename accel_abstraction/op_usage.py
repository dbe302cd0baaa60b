"""Which ATen operators a run executed on the selected device, and what its backend documents about them.

:class:`OpUsage` is a ``TorchDispatchMode`` that counts, per operator (``aten::add``), the calls
with a tensor (or a ``device=`` argument) on one device type. It sees operators below autograd
and after composite decompositions: the operators the device itself is asked to run. It costs
a Python call per operator, so it is only used on request (``accel run --ops``).

A backend plugin says what is known about operators on its hardware through the
``accel_op_support`` hook (:class:`OpSupport` rows: a status such as ``CPU_FALLBACK`` or ``N``,
what it means and the documentation it comes from); :func:`annotate` joins the two. An operator
the plugin does not list is reported with no status: unknown, not "supported".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["OpSupport", "OpUsage", "UsedOp", "annotate", "backend_op_support"]


@dataclass(frozen=True)
class OpSupport:
    """What a backend's vendor documents about one ATen operator on its hardware."""

    op: str  #: ``aten::name`` (every overload)
    status: str  #: the vendor's own word, e.g. ``CPU_FALLBACK`` or ``N``
    detail: str  #: what the entry says (``quantized operator variant``)
    source: str  #: the documentation page the fact comes from
    release: str = ""  #: the software release that page documents


@dataclass(frozen=True)
class UsedOp:
    """One operator of a run: how often it ran on the device, and its documented support (or ``None``)."""

    op: str
    calls: int
    support: OpSupport | None


class OpUsage:
    """Count the ATen operators run on ``device_type`` while the context is active::

        with OpUsage(accel.device_type()) as usage:
            model(x).sum().backward()
        usage.counts  # Counter({'aten::mm': 3, ...})
    """

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.counts: Counter[str] = Counter()
        self._mode: Any = None

    def __enter__(self) -> OpUsage:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves

        counts, device_type = self.counts, self.device_type

        def on_device(leaf: object) -> bool:
            if isinstance(leaf, torch.Tensor):
                return leaf.device.type == device_type
            return isinstance(leaf, torch.device) and leaf.type == device_type

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                if any(on_device(x) for x in tree_leaves((args, kwargs))):
                    counts[func._schema.name] += 1
                return func(*args, **kwargs)

        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        mode, self._mode = self._mode, None
        if mode is not None:
            mode.__exit__(*exc)


def backend_op_support(backend: Any) -> dict[str, OpSupport]:
    """Every plugin's ``accel_op_support`` rows for ``backend``, by operator (the first plugin's row wins).

    A plugin whose hook raises or registers something that is not an :class:`OpSupport`
    contributes nothing (a warning names it; ``accel info`` shows why).
    """
    from .errors import PluginError
    from .plugins import get_host

    def check(item: object) -> None:
        if not isinstance(item, OpSupport):
            raise PluginError(f"accel_op_support must register OpSupport rows, got {type(item).__name__}: {item!r}")

    merged: dict[str, OpSupport] = {}
    for _plugin, row in get_host().collect("accel_op_support", check, backend=backend):
        merged.setdefault(row.op, row)
    return merged


def annotate(counts: Mapping[str, int], support: Mapping[str, OpSupport]) -> list[UsedOp]:
    """The operators of ``counts``, documented fallbacks and unsupported ones first, then by calls."""
    used = [UsedOp(op, n, support.get(op)) for op, n in counts.items()]
    return sorted(used, key=lambda u: (u.support is None, -u.calls, u.op))
