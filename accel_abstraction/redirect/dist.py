"""Redirects for ``torch.distributed``: ``"nccl"`` becomes the backend's ``dist_backend()``.

``init_process_group(backend=...)`` and ``new_group(backend=...)``: ``"nccl"`` maps to
``backend.dist_backend()``; in a per-device string (``"cpu:gloo,cuda:nccl"``) the CUDA
entry maps to ``"<device_type>:<dist_backend>"`` (an explicit entry for that device type
wins). A CUDA ``device_id`` is translated like any device argument.
``DistributedDataParallel(device_ids=[i], output_device=i)`` gets the backend's indices
(none on a CPU backend, where torch accepts none).
``destroy_process_group()`` of a default group this redirect moved off NCCL (to gloo) first
waits until every rank has finished its last collective
(:func:`~accel_abstraction.distributed.teardown.settle_before_destroy`): on gloo, a rank that
tears down while a peer is still in its last collective can abort that peer, which NCCL on
the GPUs the script was written for does not do.
``FullyShardedDataParallel(device_id=i)`` gets the backend's device (``cpu`` on a CPU backend,
the one FSDP accepts there), as ``accel port``'s ``accel.fsdp_device_id(i)``; it is installed
when the program imports FSDP (:mod:`.deferred`), since importing it costs about a second.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .deferred import Deferred
from .devices import CUDA
from .hints import port_hint
from .serve import Server
from .spec import Redirect

__all__ = ["FSDP_MODULE", "dist_deferred", "dist_redirects", "translate_dist_backend"]

NCCL = "nccl"


def translate_dist_backend(value: Any, device_type: str, dist_backend: str) -> Any:
    """The collective-library string for ``value`` on the selected backend (``value`` if it names no NCCL)."""
    if not isinstance(value, str) or NCCL not in value.lower():
        return value
    if ":" not in value:
        return dist_backend if value.strip().lower() == NCCL else value
    pairs: dict[str, str] = {}
    for part in value.split(","):
        dev, _, lib = part.strip().partition(":")
        pairs[dev.strip().lower()] = lib.strip()
    cuda_lib = pairs.pop(CUDA, None)
    if cuda_lib is not None and cuda_lib.lower() == NCCL:
        pairs.setdefault(device_type, dist_backend)
    elif cuda_lib is not None:
        pairs[CUDA] = cuda_lib
    return ",".join(f"{dev}:{lib}" for dev, lib in pairs.items())


def dist_redirects(s: Server) -> list[Redirect]:
    try:
        import torch.distributed as dist
    except ImportError:  # torch built without distributed support
        return []
    if not dist.is_available():
        return []
    b = s.backend
    rec = s.recorder
    t = s.translator
    out = []

    moved = _DefaultGroupMoved(dist)

    def wrap(name: str, backend_pos: int) -> None:
        original: Callable[..., Any] = getattr(dist, name)
        api = f"torch.distributed.{name}(backend='nccl')"
        hint = port_hint(api)
        rec.describe(api, "distributed", hint)

        def replacement(*args: Any, **kwargs: Any) -> Any:
            changed = False
            lib = b.dist_backend()
            if len(args) > backend_pos:
                new = translate_dist_backend(args[backend_pos], b.device_type, lib)
                if new is not args[backend_pos]:
                    args = args[:backend_pos] + (new,) + args[backend_pos + 1:]
                    changed = True
            if "backend" in kwargs:
                new = translate_dist_backend(kwargs["backend"], b.device_type, lib)
                changed = changed or new is not kwargs["backend"]
                kwargs["backend"] = new
            if kwargs.get("device_id") is not None:
                dev = kwargs["device_id"]
                new_dev = t.translate(dev)
                if new_dev is not dev:
                    kwargs["device_id"] = new_dev
                    changed = True
            if changed:
                rec.hit(api)
            result = original(*args, **kwargs)
            if name == "init_process_group":
                moved.note(changed)
            return result

        functools.update_wrapper(replacement, original)
        out.append(Redirect(dist, name, replacement, "distributed", api, hint, record=False))

    wrap("init_process_group", 0)
    wrap("new_group", 2)
    out.append(_destroy_redirect(s, moved))
    out.append(_ddp_redirect(s))
    return out


class _DefaultGroupMoved:
    """Whether the current default group is one the redirect moved off NCCL."""

    def __init__(self, dist: ModuleType) -> None:
        self.dist = dist
        self.group: Any = None

    def note(self, moved: bool) -> None:
        self.group = self.dist.group.WORLD if moved else None

    def __call__(self, group: Any) -> bool:
        default = self.dist.group.WORLD
        return self.group is not None and default is self.group and (group is None or group is default)


def _destroy_redirect(s: Server, moved: _DefaultGroupMoved) -> Redirect:
    """``destroy_process_group()``: every rank done with its last collective first, on a group moved off NCCL."""
    from ..distributed.teardown import settle_before_destroy

    dist = moved.dist
    original: Callable[..., Any] = dist.destroy_process_group
    api = "torch.distributed.destroy_process_group()"
    hint = port_hint(api)
    s.recorder.describe(api, "distributed", hint)

    def destroy_process_group(group: Any = None) -> None:
        if moved(group):
            s.recorder.hit(api)
            settle_before_destroy(api, None)
            moved.group = None
        original(group)

    functools.update_wrapper(destroy_process_group, original)
    return Redirect(dist, "destroy_process_group", destroy_process_group, "distributed", api, hint, record=False)


def _ddp_redirect(s: Server) -> Redirect:
    """``DistributedDataParallel(model, device_ids=[i], output_device=i)`` on the backend's devices.

    CUDA indices and devices become the backend's; on a CPU backend, where torch accepts no
    ``device_ids``, they are dropped (one CPU device per process).
    """
    from torch.nn.parallel import DistributedDataParallel as DDP

    from ..distributed.ddp import device_ids_for, output_device_for

    original = DDP.__init__
    t = s.translator
    rec = s.recorder
    b = s.backend
    api = "DistributedDataParallel(device_ids=...)"
    hint = port_hint(api)
    rec.describe(api, "distributed", hint)

    def ids(value: Any) -> Any:
        # the rule accel port's accel.ddp_device_ids() follows (distributed/ddp.py)
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            return device_ids_for(b, value, t.device_for)
        return output_device_for(b, value, t.device_for)

    def __init__(self: Any, module: Any, device_ids: Any = None, output_device: Any = None, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        if device_ids is not None or output_device is not None:
            rec.hit(api)
            device_ids, output_device = ids(device_ids), ids(output_device)
        original(self, module, device_ids, output_device, *args, **kwargs)

    functools.update_wrapper(__init__, original)
    return Redirect(DDP, "__init__", __init__, "distributed", api, hint, record=False)


#: The module that defines ``FullyShardedDataParallel`` (``torch.distributed.fsdp`` imports it).
FSDP_MODULE = "torch.distributed.fsdp.fully_sharded_data_parallel"
FSDP_API = "FullyShardedDataParallel(device_id=...)"


def dist_deferred(s: Server) -> list[Deferred]:
    """The distributed redirects installed when their module is imported: FSDP's ``device_id``."""
    s.recorder.describe(FSDP_API, "distributed", port_hint(FSDP_API))
    return [Deferred(FSDP_MODULE, lambda module: [_fsdp_redirect(s, module)])]


def _fsdp_redirect(s: Server, module: ModuleType) -> Redirect:
    """``FullyShardedDataParallel(model, device_id=i)`` on the backend's device (``cpu`` on a CPU backend).

    The rule ``accel port``'s ``accel.fsdp_device_id()`` follows (distributed/ddp.py); a
    ``device_id`` of ``None`` stays ``None``, as the port leaves it.
    """
    from ..distributed.ddp import fsdp_device_id_for

    fsdp = module.FullyShardedDataParallel
    original = fsdp.__init__
    signature = inspect.signature(original)
    t, rec, b = s.translator, s.recorder, s.backend

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        bound = signature.bind(self, *args, **kwargs)
        device = bound.arguments.get("device_id")
        if device is not None:
            rec.hit(FSDP_API)
            bound.arguments["device_id"] = fsdp_device_id_for(b, device, t.device_for)
        original(*bound.args, **bound.kwargs)

    functools.update_wrapper(__init__, original)
    return Redirect(fsdp, "__init__", __init__, "distributed", FSDP_API, port_hint(FSDP_API), record=False)
