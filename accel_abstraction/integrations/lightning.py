"""Lightning Fabric and ``Trainer`` on the selected backend: ``accelerator="accel"``.

Importing this module registers, in Lightning's accelerator registries (Fabric's and the
Trainer's; Lightning has no entry-point discovery), an accelerator named ``"accel"`` that
follows accel's selection (``ACCEL_BACKEND`` / ``[tool.accel]`` / ``accel.use``), so one
configuration line moves a Lightning script, and one accelerator per accel backend whose
name Lightning does not already use (``"neuron"`` with the neuron plugin installed), bound
to that backend::

    import accel_abstraction.integrations.lightning  # noqa: F401  (registers "accel")

    fabric = Fabric(accelerator="accel", precision="bf16-mixed")           # devices="auto": all
    trainer = Trainer(accelerator="accel", devices=2)                        # DDP over two devices

Lightning pairs an accelerator it does not know with a CPU single-device strategy and
autocasts "cuda" for any mixed precision; for these accelerators (and only these) its
connectors are taught the matching choices, also on import:

* one device: ``SingleDeviceStrategy`` on that device; several: ``DDPStrategy``, whose
  process group is the backend's collective library (``backend.dist_backend()``, bound to a
  device only where ``backend.dist_device_id`` says so) and whose ranks take ``device(local_rank)``;
  Fabric's versions also re-link an optimizer made before ``fabric.setup`` to the moved
  parameters (as Fabric does for XLA: moving to a PrivateUse1 device makes new ones);
* ``"16-mixed"`` / ``"bf16-mixed"``: ``MixedPrecision`` autocasting the backend's device type.
* the DDP strategies' default group, which Lightning leaves to interpreter exit, settles there before
  it is destroyed (every rank finished its last collective: on gloo a rank tearing down early can
  abort its peer, docs/distributed.md).

Nothing else happens on import: the backend is selected when Lightning first asks the
accelerator for its devices.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from lightning.fabric.accelerators import ACCELERATOR_REGISTRY
from lightning.fabric.connector import _Connector
from lightning.pytorch.accelerators import Accelerator, AcceleratorRegistry
from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector

from ..interface import Backend

__all__ = ["AccelAccelerator", "accelerator_for", "register"]

#: The name of the accelerator that follows accel's selection.
FOLLOWS_SELECTION = "accel"


class AccelAccelerator(Accelerator):
    """A Lightning accelerator served by an accel backend: the selected one, or the one named ``backend_name``."""

    backend_name: ClassVar[str | None] = None
    """``None``: whatever accel selects; else this backend (selected for the process on first use)."""

    @classmethod
    def backend(cls) -> Backend:
        """The accel backend this accelerator runs on (selecting it if needed)."""
        from .. import runtime

        if cls.backend_name is None:
            return runtime.current()
        current = runtime.current()
        return current if current.name == cls.backend_name else runtime.use(cls.backend_name)

    def setup_device(self, device: torch.device) -> None:
        backend = self.backend()
        if device.type != backend.device_type:
            raise ValueError(f"accelerator {self.name()!r} runs on {backend.device_type!r} devices, got {device}")
        backend.set_device(device.index or 0)

    def setup(self, trainer: Any) -> None:
        pass

    def teardown(self) -> None:
        pass

    def get_device_stats(self, device: Any) -> dict[str, Any]:
        backend = self.backend()
        if not backend.capabilities().memory_stats:
            return {}
        return dict(backend.memory_stats(device))

    @classmethod
    def parse_devices(cls, devices: Any) -> list[int]:  # type: ignore[override]
        """``"auto"``/``-1``: every device; an int ``n``: the first ``n``; a list or ``"0,1"``: those indices."""
        count = cls.backend().device_count()
        if devices in ("auto", -1, "-1"):
            return list(range(count))
        if isinstance(devices, str):
            devices = int(devices) if devices.strip().isdigit() else [int(d) for d in devices.split(",") if d.strip()]
        indices = list(range(devices)) if isinstance(devices, int) else [int(d) for d in devices]
        if cls.backend().device_type == "cpu" and isinstance(devices, int) and devices > 0:
            return [0] * devices  # processes sharing the host, as Lightning's CPU accelerator allows
        if not indices or any(i < 0 or i >= count for i in indices):
            raise ValueError(
                f"devices={devices!r} for accelerator {cls.name()!r}: backend {cls.backend().name!r} has {count} "
                f"device(s) (indices 0..{count - 1})"
            )
        return indices

    @classmethod
    def get_parallel_devices(cls, devices: Any) -> list[torch.device]:  # type: ignore[override]
        backend = cls.backend()
        return [backend.device(i) for i in cls.parse_devices(devices)]

    @classmethod
    def auto_device_count(cls) -> int:  # type: ignore[override]
        return int(cls.backend().device_count())

    @classmethod
    def is_available(cls) -> bool:  # type: ignore[override]
        """Whether the backend can run here, probed without changing accel's selection."""
        from .. import runtime
        from ..plugins import get_host
        from ..sections import CORE
        from ..selection import build_backend, probe

        if cls.backend_name is None:
            try:
                runtime.current()
            except Exception:  # noqa: BLE001 - Lightning lists available accelerators; the error comes on use
                return False
            return True
        entry = get_host().registry.get(cls.backend_name, "Lightning accelerator")
        return probe(build_backend(entry, CORE.load()), entry).available

    @classmethod
    def name(cls) -> str:  # type: ignore[override]
        return cls.backend_name or FOLLOWS_SELECTION


class _KeepsOptimizerParameters:
    """Fabric strategy mixin: an optimizer made before ``fabric.setup`` steps the moved parameters.

    Moving a module to a device that PyTorch does not count as shallow-copy compatible with
    the CPU (every PrivateUse1 device) makes new ``Parameter`` objects, so an optimizer built
    on the CPU module (Fabric's documented order) would step the stale CPU tensors. Fabric
    re-links them for XLA only; this does the same for accel's devices.
    """

    _moved: dict[int, torch.nn.Parameter]

    def module_to_device(self, module: torch.nn.Module) -> None:
        before = dict(module.named_parameters())
        super().module_to_device(module)  # type: ignore[misc]
        after = dict(module.named_parameters())
        self._moved = {id(p): after[n] for n, p in before.items() if n in after and after[n] is not p}

    def setup_module_and_optimizers(self, module: Any, optimizers: Any, *args: Any, **kwargs: Any) -> Any:
        moved = getattr(self, "_moved", {})
        for optimizer in optimizers:
            for group in optimizer.param_groups:
                group["params"] = [moved.get(id(p), p) for p in group["params"]]
        return super().setup_module_and_optimizers(module, optimizers, *args, **kwargs)  # type: ignore[misc]


#: Seconds each wait of the exit-time settle may take (a peer that already exited ends it at once).
SETTLE_AT_EXIT_S = 60.0
_settle_registered = False


def _settle_at_exit() -> None:
    """Fabric and the Trainer leave their default group alive to interpreter exit, where a gloo rank that
    tears its connections down while a peer is still in its last collective can abort that peer
    (``terminate called without an active exception``; docs/distributed.md): every rank settles first
    (:func:`~accel_abstraction.distributed.teardown.settle_before_destroy`), then the group is destroyed.
    Nothing happens when the script destroyed it itself."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    from ..distributed.teardown import settle_before_destroy

    settle_before_destroy("Lightning's DDP at interpreter exit", SETTLE_AT_EXIT_S)
    dist.destroy_process_group()


def _connect(strategy: Any) -> None:
    """``init_process_group`` as accel's backend wants it: its collective library, and a ``device_id`` only
    where the backend binds groups to devices (``Backend.dist_device_id``; Lightning always passes one);
    the group settles before it is destroyed at interpreter exit (:func:`_settle_at_exit`)."""
    global _settle_registered
    from lightning.fabric.utilities.distributed import _init_dist_connection

    backend = strategy.accelerator.backend()
    strategy._process_group_backend = strategy._process_group_backend or backend.dist_backend()
    device_id = backend.dist_device_id(strategy.local_rank)
    kwargs: dict[str, Any] = {"timeout": strategy._timeout}
    if device_id is not None:
        kwargs["device_id"] = device_id
    _init_dist_connection(strategy.cluster_environment, strategy._process_group_backend, **kwargs)
    if not _settle_registered:
        atexit.register(_settle_at_exit)
        _settle_registered = True


def _wrap_ddp(strategy: Any, module: torch.nn.Module, device_ids: list[int] | None) -> Any:
    """DDP around ``module``, built on a side stream of the backend where it has streams (Lightning
    uses a CUDA stream whenever ``device_ids`` is set)."""
    from torch.nn.parallel import DistributedDataParallel

    backend = strategy.accelerator.backend()
    streams = device_ids is not None and backend.capabilities().streams
    with backend.stream(backend.Stream()) if streams else contextlib.nullcontext():
        return DistributedDataParallel(module=module, device_ids=device_ids, **strategy._ddp_kwargs)


class _FabricDDP:
    def _setup_distributed(self) -> None:
        self._set_world_ranks()  # type: ignore[attr-defined]
        _connect(self)

    def setup_module(self, module: torch.nn.Module) -> Any:
        return _wrap_ddp(self, module, self._determine_ddp_device_ids())  # type: ignore[attr-defined]


class _TrainerDDP:
    def setup_distributed(self) -> None:
        from lightning.fabric.utilities.seed import reset_seed

        reset_seed()
        self.set_world_ranks()  # type: ignore[attr-defined]
        _connect(self)

    def _setup_model(self, model: torch.nn.Module) -> Any:
        return _wrap_ddp(self, model, self.determine_ddp_device_ids())  # type: ignore[attr-defined]


def accelerator_for(backend_name: str | None) -> type[AccelAccelerator]:
    """The accelerator class bound to accel backend ``backend_name`` (``None``: follows the selection)."""
    label = "".join(part.capitalize() for part in (backend_name or "selected").replace("-", "_").split("_"))
    return type(f"Accel{label}Accelerator", (AccelAccelerator,), {"backend_name": backend_name, "__module__": __name__})


def _register_in(registry: Any, cls: type[AccelAccelerator]) -> bool:
    if cls.name() in registry:
        return False
    registry.register(cls.name(), cls, description=f"{cls.__name__} (accel-abstraction)")
    return True


def _is_ours(connector: Any) -> AccelAccelerator | None:
    acc = getattr(connector, "accelerator", None)
    return acc if isinstance(acc, AccelAccelerator) else None


def _teach(
    connector_cls: type, precision_attr: str, plugin_attr: str, single: Callable[..., Any], ddp: Callable[..., Any],
    mixed: Callable[..., Any],
) -> None:
    """Wrap one Lightning connector's strategy and precision choice for accel accelerators only."""
    choose_strategy = connector_cls._choose_strategy  # type: ignore[attr-defined]
    init_precision = connector_cls._check_and_init_precision  # type: ignore[attr-defined]
    if getattr(choose_strategy, "__accel__", False):
        return

    @functools.wraps(choose_strategy)
    def _choose_strategy(self: Any) -> Any:
        if _is_ours(self) is None or self._num_nodes_flag > 1:
            return choose_strategy(self)
        devices = self._parallel_devices
        if len(devices) <= 1:
            return single(device=devices[0])
        return ddp(process_group_backend=_is_ours(self).backend().dist_backend())  # type: ignore[union-attr]

    @functools.wraps(init_precision)
    def _check_and_init_precision(self: Any) -> Any:
        acc = _is_ours(self)
        flag = getattr(self, precision_attr)
        if acc is None or getattr(self, plugin_attr) is not None or flag not in ("16-mixed", "bf16-mixed"):
            return init_precision(self)
        return mixed(flag, acc.backend().device_type)

    _choose_strategy.__accel__ = True  # type: ignore[attr-defined]
    connector_cls._choose_strategy = _choose_strategy  # type: ignore[attr-defined]
    connector_cls._check_and_init_precision = _check_and_init_precision  # type: ignore[attr-defined]


def register() -> list[str]:
    """Register ``"accel"`` and one accelerator per accel backend name Lightning does not use; return the
    names registered. Idempotent; :mod:`accel_abstraction.integrations.lightning` calls it on import."""
    from lightning.fabric.plugins.precision import MixedPrecision as FabricMixed
    from lightning.fabric.strategies import DDPStrategy as FabricDDP
    from lightning.fabric.strategies import SingleDeviceStrategy as FabricSingle
    from lightning.pytorch.plugins.precision import MixedPrecision as TrainerMixed
    from lightning.pytorch.strategies import DDPStrategy as TrainerDDP
    from lightning.pytorch.strategies import SingleDeviceStrategy as TrainerSingle

    from ..plugins import get_host

    single = type("AccelSingleDeviceStrategy", (_KeepsOptimizerParameters, FabricSingle), {"__module__": __name__})
    ddp = type("AccelDDPStrategy", (_FabricDDP, _KeepsOptimizerParameters, FabricDDP), {"__module__": __name__})
    trainer_ddp = type("AccelDDPStrategy", (_TrainerDDP, TrainerDDP), {"__module__": __name__})
    _teach(_Connector, "_precision_input", "_precision_instance", single, ddp, FabricMixed)
    _teach(_AcceleratorConnector, "_precision_flag", "_precision_plugin_flag", TrainerSingle, trainer_ddp, TrainerMixed)
    done = []
    for name in [None, *(entry.spec.name for entry in get_host().registry)]:
        cls = accelerator_for(name)  # a name Lightning already has ("cpu", "cuda") stays Lightning's
        if _register_in(ACCELERATOR_REGISTRY, cls) | _register_in(AcceleratorRegistry, cls):
            done.append(cls.name())
    return done


register()
