"""Translate CUDA device arguments to the selected backend's devices, by parsing them.

``"cuda"``, ``"cuda:1"``, ``torch.device("cuda", 1)`` and, where torch reads an integer as
a CUDA index, ``1`` are parsed as devices (``torch.device(...)``) and mapped to the same
index of the selected backend (``backend.device(1)``), which checks the index against the
backend's device count. On a backend with one device (the cpu backend, where every rank of
a job shares the host; a device per process, as the emulated neuron device or a launcher's
visible-devices variable give) every index names that device, so ``torch.cuda.set_device(local_rank)``
in each rank of a multi-process job runs. Nothing is string-replaced: ``"cudagraph"``, ``"my_cuda.pt"`` or a
``"cpu"`` device pass through untouched, and a malformed string is left for torch to reject.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..errors import AccelError, DeviceIndexError
from ..interface import Backend

__all__ = ["CUDA", "DeviceTranslator"]

CUDA = "cuda"
_NOT_CUDA = object()


class DeviceTranslator:
    """Maps CUDA device arguments to ``backend``'s devices. Results are cached per argument."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.device_type = backend.device_type
        self._cache: dict[Any, Any] = {}
        # One device (the host CPU shared by every rank, or the one device a launcher made
        # visible to this rank): every CUDA index names it (torchrun's LOCAL_RANK=1 -> "cuda:1").
        self._shared = backend.device_count() == 1

    def _parse(self, arg: str | torch.device) -> Any:
        if isinstance(arg, str):
            try:
                dev = torch.device(arg)
            except (RuntimeError, TypeError):
                self._cache[arg] = _NOT_CUDA  # not a device string: torch reports it if it matters
                return _NOT_CUDA
        else:
            dev = arg
        if dev.type != CUDA:
            result: Any = _NOT_CUDA
        else:
            result = self._to_backend(dev.index, arg)
        self._cache[arg] = result
        return result

    def _to_backend(self, index: int | None, original: Any) -> torch.device:
        if self._shared and index is not None and index >= 0:
            return self.backend.device()
        try:
            return self.backend.device(index)
        except DeviceIndexError as exc:
            raise DeviceIndexError(f"{str(original)!r} cannot be redirected: {exc}") from None

    def translate(self, arg: Any) -> Any:
        """``arg`` mapped to the backend's device if it names a CUDA device, else ``arg`` itself."""
        t = type(arg)
        if t is str or t is torch.device:
            hit = self._cache.get(arg)
            if hit is None:
                hit = self._parse(arg)
            return arg if hit is _NOT_CUDA else hit
        return arg

    def names_cuda(self, arg: Any) -> bool:
        """True if ``arg`` is a string or ``torch.device`` naming a CUDA device."""
        return self.translate(arg) is not arg

    def device_for(self, device: Any) -> torch.device:
        """The backend device for a ``Tensor.cuda(device)`` / ``torch.cuda.*(device)`` argument (int, str, device, None)."""
        if device is None:
            return self.backend.device()
        if isinstance(device, int) and not isinstance(device, bool):
            return self._to_backend(device, f"cuda:{device}")
        out = self.translate(device)
        if out is not device:
            return out  # type: ignore[no-any-return]
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            dev = None
        if dev is None or dev.type != self.device_type:
            raise AccelError(
                f"{device!r} is neither a CUDA device nor a {self.device_type!r} device "
                f"(expected an index, 'cuda', 'cuda:N' or torch.device('cuda', N))"
            )
        return self.backend.device(dev.index)

    def index(self, device: Any) -> int | None:
        """The backend index for a ``torch.cuda.*(device)`` argument (``None``: the current device)."""
        if device is None:
            return None
        return self.device_for(device).index

    def to_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], bool]:
        """Translate the device of a ``.to(...)`` call in place; return (args, changed).

        The first positional argument is a device when it is a string, a ``torch.device``
        or an integer (torch reads ``t.to(1)`` as ``cuda:1``); ``device=`` likewise.
        """
        changed = False
        if args:
            first = args[0]
            if isinstance(first, int) and not isinstance(first, bool):
                args = (self._to_backend(first, f"cuda:{first}"),) + args[1:]
                changed = True
            else:
                new = self.translate(first)
                if new is not first:
                    args = (new,) + args[1:]
                    changed = True
        if kwargs:
            dev = kwargs.get("device")
            if dev is not None:
                if isinstance(dev, int) and not isinstance(dev, bool):
                    kwargs["device"] = self._to_backend(dev, f"cuda:{dev}")
                    changed = True
                else:
                    new = self.translate(dev)
                    if new is not dev:
                        kwargs["device"] = new
                        changed = True
        return args, changed

    def map_location(self, value: Any, on_remap: Callable[[], None]) -> Any:
        """A ``torch.load`` ``map_location`` that puts CUDA storages on the backend.

        A CUDA string or device is translated; a dict has its CUDA values translated;
        ``None`` becomes a function that restores CUDA storages on the backend's device and
        leaves the others as saved. A user's own function is kept. ``on_remap`` is called
        when a CUDA location is remapped.
        """
        if value is None:
            restore = torch.serialization.default_restore_location

            def remap(storage: Any, location: str) -> Any:
                new = self.translate(location)
                if new is location:
                    return None  # torch restores it as saved
                on_remap()
                return restore(storage, _location(new))

            return remap
        if isinstance(value, dict):
            out = {k: (_location(self.translate(v)) if self.names_cuda(v) else v) for k, v in value.items()}
            if out != value:
                on_remap()
            return out
        new = self.translate(value)
        if new is not value:
            on_remap()
            return torch.device(_location(new))
        return new


def _location(device: torch.device) -> str:
    """A serialization location for ``device`` (torch restores CPU storages only as ``"cpu"``)."""
    return "cpu" if device.type == "cpu" else str(device)
