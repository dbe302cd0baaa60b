"""Seeds of ``accel parity --seeds N``: run ``k`` replaces every seed the script sets by one derived from (seed, k).

Run 0 keeps the script's own seeds (``derive(s, 0) == s``), so ``--seeds 1`` is today's run.
In run ``k > 0`` (``ACCEL_PARITY_SEED_INDEX=k`` in its environment, read by
:mod:`.launch`), every call in :data:`SEED_CALLS`, plus the seeding of the device module and of
the backend that gets selected, seeds with ``derive(value, k)`` instead of ``value``: an
unmodified script that hard-codes ``torch.manual_seed(1337)`` gets N different runs, and the
runs with the same ``k`` on two backends get the same seeds. A seeding call made from inside
another one (``torch.manual_seed`` seeding each device module) passes its value through
unchanged: a seed is derived once, where the script set it.

Where the functions are taken from is this one table; ``docs/parity.md`` lists it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..hookspecs import hookimpl

__all__ = ["DERIVATION", "ENV_VAR", "SEED_CALLS", "SeedCall", "derive", "install"]

ENV_VAR = "ACCEL_PARITY_SEED_INDEX"

#: How :func:`derive` works, in words (recorded in ``parity.json``).
DERIVATION = (
    "run 0 keeps the script's seeds; run k > 0 seeds with the first 8 bytes (little-endian) of "
    "blake2b(repr(seed) + ':' + str(k)) modulo the function's range (2**63 torch, 2**32 numpy, 2**64 random)"
)

#: Names of seeding functions on a backend (``accel.manual_seed``) and on torch's device modules.
DEVICE_SEEDERS = ("manual_seed", "manual_seed_all")


@dataclass(frozen=True)
class SeedCall:
    """One seeding function the script may call: ``module.name`` (``owner`` a class name, or ``""``)."""

    module: str
    name: str
    bits: int  # the range the function accepts: derived seeds are taken modulo 2**bits
    owner: str = ""


#: The seeding calls replaced in runs ``k > 0`` (the device modules of torch, such as
#: ``torch.cuda``, and the selected backend's ``manual_seed``/``manual_seed_all`` are found
#: when the run starts and when the backend is selected, so no vendor is named here).
SEED_CALLS: tuple[SeedCall, ...] = (
    SeedCall("torch", "manual_seed", 63),
    SeedCall("torch.random", "manual_seed", 63),
    SeedCall("random", "seed", 64),
    SeedCall("numpy.random", "seed", 32),
    SeedCall("torch", "manual_seed", 63, owner="Generator"),
)

_state = threading.local()


def derive(seed: Any, index: int, bits: int = 63) -> Any:
    """The seed run ``index`` uses where the script sets ``seed`` (``seed`` itself for run 0 or ``None``)."""
    if index == 0 or seed is None:
        return seed
    digest = hashlib.blake2b(f"{seed!r}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % (1 << bits)


def _deriving(fn: Callable[..., Any], index: int, bits: int) -> Callable[..., Any]:
    """``fn`` with its first argument (the seed) derived for run ``index``; nested calls pass through."""
    if getattr(fn, "__accel_parity_seeded__", False):
        return fn

    @functools.wraps(fn)
    def seeded(*args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "depth", 0) or not args:
            return fn(*args, **kwargs)
        _state.depth = 1
        try:
            return fn(derive(args[0], index, bits), *args[1:], **kwargs)
        finally:
            _state.depth = 0

    seeded.__accel_parity_seeded__ = True  # type: ignore[attr-defined]
    return seeded


def _generator_class(base: type, index: int, bits: int) -> type:
    """A ``torch.Generator`` whose ``manual_seed`` derives; ``isinstance`` still accepts every generator."""

    class _Meta(type(base)):  # type: ignore[misc]
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, base)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, base)

    plain = base.manual_seed  # type: ignore[attr-defined]

    def manual_seed(self: Any, value: Any) -> Any:
        return plain(self, value if getattr(_state, "depth", 0) else derive(value, index, bits))

    return _Meta("Generator", (base,), {"manual_seed": manual_seed, "__module__": "torch", "__doc__": base.__doc__})


def _patch_device_modules(index: int) -> None:
    torch = sys.modules.get("torch")
    if torch is None:
        return
    for value in list(vars(torch).values()):
        if isinstance(value, types.ModuleType) and value.__name__.startswith("torch."):
            for name in DEVICE_SEEDERS:
                fn = getattr(value, name, None)
                if callable(fn) and value.__name__ != "torch.random":
                    setattr(value, name, _deriving(fn, index, 63))


class _SeedPlugin:
    """Derives the selected backend's seeds (``accel.manual_seed``, and under ``--redirect`` the
    redirected device module's seeding, which the redirect serves from the backend)."""

    def __init__(self, index: int) -> None:
        self.index = index

    @hookimpl
    def accel_backend_selected(self, backend: Any, settings: Any) -> None:
        for name in DEVICE_SEEDERS:
            setattr(backend, name, _deriving(getattr(backend, name), self.index, 63))
        hot = backend.hot_bindings
        backend.hot_bindings = lambda: {k: v for k, v in hot().items() if k not in DEVICE_SEEDERS}
        _patch_device_modules(self.index)  # the backend's device module may exist only now


def install(index: int) -> None:
    """Make this process run ``index`` of ``--seeds`` (nothing to do for run 0)."""
    if index == 0:
        return
    for call in SEED_CALLS:
        try:
            module = importlib.import_module(call.module)
        except ImportError:  # numpy is optional
            continue
        if call.owner:
            base = getattr(module, call.owner)
            setattr(module, call.owner, _generator_class(base, index, call.bits))
        else:
            setattr(module, call.name, _deriving(getattr(module, call.name), index, call.bits))
    _patch_device_modules(index)
    from ..plugins import register_plugin

    register_plugin(_SeedPlugin(index), "accel-parity-seeds")
