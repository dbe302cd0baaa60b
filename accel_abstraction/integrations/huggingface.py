"""Hugging Face ``accelerate`` and ``transformers.Trainer`` on the selected backend's device.

Both libraries choose a device from their own list of ``is_<vendor>_available()`` checks,
so a device they do not list (an out-of-tree PrivateUse1 device, an emulated one) is
never chosen: an unchanged ``Trainer`` script trains on the CPU, and ``bf16=True`` stops
with ``ValueError: Your setup doesn't support bf16/gpu``. :func:`expose` closes both gaps
through the switches the libraries already read, without importing them:

* ``ACCELERATE_TORCH_DEVICE`` (accelerate's documented override; ``Trainer`` reads it
  too) is set to the backend's current device, unless the user set it; in a process a
  launcher started (``LOCAL_RANK`` set: ``accelerate launch``, ``torchrun``) to device
  ``LOCAL_RANK`` (modulo the device count), as the launchers do for CUDA;
* where accelerate has an ``is_<device type>_available()`` for the backend's device type, the
  one ``accelerate.state`` calls answers ``True`` for it, once that module is imported (it
  otherwise asks for the vendor package): under ``accelerate launch`` / ``torchrun``,
  ``PartialState`` then picks the device's multi-process type and collective library (the
  backend's ``dist_backend_name``) and rank ``r``'s device. Only ``accelerate.state``'s: the
  other callers reach for vendor-only functions (``get_rng_state_all``);
* ``transformers.training_args.is_torch_bf16_gpu_available`` also answers the backend's
  ``is_bf16_supported()``, once ``transformers.training_args`` is imported;
* ``Accelerator.prepare(model, optimizer)`` re-links an optimizer made on the CPU module to
  the parameters the move made (on a device PyTorch does not count as shallow-copy
  compatible with the CPU, every PrivateUse1 device, ``.to()`` makes new ``Parameter``
  objects, and the optimizer would step the stale CPU ones; accelerate re-links for XLA only);
* ``Trainer`` checkpoints carry the device's RNG state (``Trainer`` saves and restores it
  only for the devices it lists): beside ``rng_state.pth`` a ``rng_state_<device type>.pth``
  holds the generator state of the current device (of every device in a distributed run,
  as ``Trainer`` does for CUDA), and resuming restores it, so dropout on the device draws the
  stream an uninterrupted run draws.

A backend plugin calls :func:`expose` from its ``accel_backend_selected`` hook where the
libraries do not know its device, and :func:`conceal` when another backend is selected.
Nothing here imports ``accelerate`` or ``transformers``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .post_import import when_imported

if TYPE_CHECKING:
    from ..interface import Backend

__all__ = ["DEVICE_VAR", "conceal", "device_rng_file", "expose", "exposed"]

#: accelerate's override of its device choice (``PartialState``); ``TrainingArguments`` reads it too.
DEVICE_VAR = "ACCELERATE_TORCH_DEVICE"
_BF16_CHECK = ("transformers.training_args", "is_torch_bf16_gpu_available")
_TRAINER = ("transformers.trainer", "Trainer")
#: The value accel gave DEVICE_VAR, inherited by child processes with it: a launched worker
#: (``accelerate launch``, ``torchrun``) then replaces the launcher's device by its own rank's.
_SET_MARK = "_ACCEL_SET_ACCELERATE_TORCH_DEVICE"
_ACCELERATE_CHECKS = "accelerate.state"
_ACCELERATOR = ("accelerate.accelerator", "Accelerator")

_exposed: Backend | None = None
_set_by_us: str | None = None


def exposed() -> Backend | None:
    """The backend whose device accelerate and ``Trainer`` are pointed at, if any."""
    return _exposed


def expose(backend: Backend) -> None:
    """Point accelerate and ``transformers.Trainer`` at ``backend``'s current device; accept ``bf16=True``
    where ``backend.is_bf16_supported()``. A ``ACCELERATE_TORCH_DEVICE`` the user set is left alone."""
    global _exposed, _set_by_us
    first = _exposed is None
    _exposed = backend
    current = os.environ.get(DEVICE_VAR)
    if current is None or current in (_set_by_us, os.environ.get(_SET_MARK)):  # unset, or set by accel (here or in
        _set_by_us = os.environ[DEVICE_VAR] = os.environ[_SET_MARK] = (  # a launcher whose environment we inherited)
            f"{backend.device_type}:{_device_index(backend)}"
        )
    if first:
        when_imported(_BF16_CHECK[0], _widen_bf16_check)
        when_imported(_TRAINER[0], _carry_device_rng)
        when_imported(_ACCELERATE_CHECKS, _widen_accelerate_check)
        when_imported(_ACCELERATOR[0], _relink_prepared_optimizers)


def conceal() -> None:
    """Undo :func:`expose`: the libraries choose by their own checks again (the bf16 check asks
    nothing more of a backend that is not exposed)."""
    global _exposed, _set_by_us
    _exposed = None
    if _set_by_us is not None and os.environ.get(DEVICE_VAR) == _set_by_us:
        del os.environ[DEVICE_VAR]
    if _set_by_us is not None and os.environ.get(_SET_MARK) == _set_by_us:
        del os.environ[_SET_MARK]
    _set_by_us = None


def _device_index(backend: Backend) -> int:
    """``LOCAL_RANK`` modulo the device count in a launched process, else the current device."""
    local_rank = os.environ.get("LOCAL_RANK", "")
    if local_rank.isdigit():
        return int(local_rank) % max(1, int(backend.device_count()))
    return int(backend.current_device())


def _widen_accelerate_check(module: ModuleType) -> None:
    backend = _exposed
    if backend is None:
        return
    device_type = backend.device_type
    name = f"is_{device_type}_available"
    original: Callable[..., bool] | None = getattr(module, name, None)
    if original is None or getattr(original, "__wrapped_by_accel__", False):
        return

    def is_available(*args: Any, **kwargs: Any) -> bool:
        exposed_now = _exposed
        return (exposed_now is not None and exposed_now.device_type == device_type) or original(*args, **kwargs)

    is_available.__name__ = name
    _install(module, name, original, is_available)


def _widen_bf16_check(module: ModuleType) -> None:
    name = _BF16_CHECK[1]
    original: Callable[[], bool] = getattr(module, name)
    if getattr(original, "__wrapped_by_accel__", False):
        return

    def is_torch_bf16_gpu_available() -> bool:
        backend = _exposed
        return original() or (backend is not None and bool(backend.is_bf16_supported()))

    _install(module, name, original, is_torch_bf16_gpu_available)


def device_rng_file(checkpoint: str | os.PathLike[str], device_type: str, world_size: int, process_index: int) -> str:
    """Where a ``Trainer`` checkpoint keeps ``device_type``'s RNG state: ``rng_state_<type>.pth``, or
    ``rng_state_<type>_<rank>.pth`` per process when ``world_size > 1`` (as ``rng_state_<rank>.pth``)."""
    name = f"rng_state_{device_type}.pth" if world_size <= 1 else f"rng_state_{device_type}_{process_index}.pth"
    return os.path.join(os.fspath(checkpoint), name)


def _carry_device_rng(module: ModuleType) -> None:
    """Wrap ``Trainer._save_rng_state`` / ``_load_rng_state`` to also save / restore the exposed device's RNG."""
    trainer = getattr(module, _TRAINER[1])
    save, load = trainer._save_rng_state, trainer._load_rng_state
    if getattr(save, "__wrapped_by_accel__", False):
        return

    def _save_rng_state(self: Any, output_dir: str) -> None:
        save(self, output_dir)
        backend = _exposed
        if backend is None:
            return
        import io

        import torch

        from ..safe_io import atomic_write

        states = backend.get_rng_state_all() if _distributed(self) else backend.get_rng_state()
        path = device_rng_file(output_dir, backend.device_type, self.args.world_size, self.args.process_index)
        buffer = io.BytesIO()
        torch.save(states, buffer)
        atomic_write(path, buffer.getvalue(), what="the device RNG state")

    def _load_rng_state(self: Any, checkpoint: str | None) -> None:
        load(self, checkpoint)
        backend = _exposed
        if backend is None or checkpoint is None:
            return
        path = device_rng_file(checkpoint, backend.device_type, self.args.world_size, self.args.process_index)
        if not os.path.isfile(path):  # a checkpoint written without the glue: Trainer's own behaviour
            return
        import torch

        states = torch.load(path, weights_only=True)
        if isinstance(states, list):
            backend.set_rng_state_all(states)
        else:
            backend.set_rng_state(states)

    _install(trainer, "_save_rng_state", save, _save_rng_state)
    _install(trainer, "_load_rng_state", load, _load_rng_state)


def _distributed(trainer: Any) -> bool:
    """Whether ``trainer`` runs one process per device (``ParallelMode.DISTRIBUTED``), by the mode's value."""
    return str(getattr(trainer.args.parallel_mode, "value", "")) == "distributed"


def _relink_prepared_optimizers(module: ModuleType) -> None:
    """Wrap ``Accelerator.prepare``: optimizers it returns step the parameters of the prepared models."""
    accelerator = getattr(module, _ACCELERATOR[1])
    prepare = accelerator.prepare
    if getattr(prepare, "__wrapped_by_accel__", False):
        return

    def prepare_and_relink(self: Any, *args: Any, **kwargs: Any) -> Any:
        backend = _exposed
        if backend is None or getattr(self.device, "type", None) != backend.device_type:
            return prepare(self, *args, **kwargs)
        before = self._get_named_parameters(*args, drop_refs=False)
        result = prepare(self, *args, **kwargs)
        prepared = result if isinstance(result, tuple) else (result,)
        after = self._get_named_parameters(*prepared, drop_refs=False)
        moved = {p: after[n] for n, p in before.items() if n in after and after[n] is not p}
        for obj in prepared:
            inner = getattr(obj, "optimizer", obj)  # accelerate's AcceleratedOptimizer wraps the user's
            for group in getattr(inner, "param_groups", ()) if moved else ():
                group["params"] = [moved.get(p, p) for p in group["params"]]
        return result

    _install(accelerator, "prepare", prepare, prepare_and_relink)


def _install(owner: Any, name: str, original: Callable[..., Any], replacement: Callable[..., Any]) -> None:
    """Put ``replacement`` at ``owner.name`` in place of ``original``, marked so a second install is a no-op."""
    replacement.__wrapped_by_accel__ = True  # type: ignore[attr-defined]
    replacement.__doc__ = original.__doc__
    setattr(owner, name, replacement)
