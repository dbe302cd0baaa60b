"""Argument checks for the public functions whose torch callables would fail obscurely on misuse.

``accel.manual_seed("x")`` would otherwise surface torch's ``RuntimeError: manual_seed
expected a long``, ``accel.autocast(dtype=torch.int8)`` a warning and a silently disabled
autocast. :func:`guard` wraps the callable bound for such a name (a backend method or a
hot torch callable alike, so a plugin's override is checked too) in a check that raises
:class:`~accel_abstraction.errors.ArgumentTypeError` /
:class:`~accel_abstraction.errors.ArgumentValueError` saying what was expected.

Only names whose torch call already costs far more than one Python frame are guarded
(seeding, RNG state, the numerics switches); the cheap hot calls (``synchronize``,
``device_count``, ...) are bound unwrapped, and ``autocast``, entered on every training
step, checks its dtype inside :meth:`Backend.autocast` (no extra frame) with
:func:`autocast_dtype_error`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .api import GUARDS
from .errors import AccelError, ArgumentTypeError, ArgumentValueError
from .requirements import missing

try:
    import torch
except ModuleNotFoundError as _exc:
    raise missing(_exc, "torch", "the accelerator runtime (accel.device(), accel info, the backends)") from None

if TYPE_CHECKING:
    from .interface import Backend

__all__ = ["CHECKS", "GUARDED", "autocast_dtype_error", "check_flag", "check_rng_state", "check_seed", "guard"]

_SEED_MIN, _SEED_MAX = -(2**63), 2**64 - 1


def check_seed(seed: Any, where: str = "manual_seed") -> int:
    """``seed`` as an int; :class:`ArgumentTypeError` unless it is an integer in torch's seed range."""
    if type(seed) is not int:
        if isinstance(seed, bool):
            raise ArgumentTypeError(f"accel.{where}(seed) takes an integer, not the bool {seed!r}")
        try:
            seed = operator.index(seed)
        except TypeError:
            raise ArgumentTypeError(
                f"accel.{where}(seed) takes an integer, not {type(seed).__name__} {seed!r}"
                + ("; convert it with int(...)" if isinstance(seed, (str, float)) else "")
            ) from None
    if not _SEED_MIN <= seed <= _SEED_MAX:
        raise ArgumentValueError(f"accel.{where}(seed): {seed} is outside the seed range -2**63 .. 2**64-1")
    return seed


def check_rng_state(state: Any, where: str = "set_rng_state") -> torch.Tensor:
    """``state`` if it is a generator state (a ``torch.uint8`` tensor); else :class:`ArgumentTypeError`."""
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
        got = f"a {state.dtype} tensor" if isinstance(state, torch.Tensor) else f"{type(state).__name__} {state!r:.60}"
        raise ArgumentTypeError(
            f"accel.{where}() takes a generator state (a torch.uint8 tensor, as accel.get_rng_state() "
            f"returns), not {got}"
        )
    return state


def check_flag(value: Any, name: str, where: str) -> bool:
    """``value`` as a bool: ``True``/``False`` (or the integers 1/0); else :class:`ArgumentTypeError`."""
    if value is True or value is False:
        return value
    if type(value) is int and value in (0, 1):
        return bool(value)
    raise ArgumentTypeError(f"accel.{where}({name}) takes True or False, not {type(value).__name__} {value!r}")


def _seed_guard(name: str, fn: Callable[..., Any], backend: Backend) -> Callable[..., Any]:
    def seeded(seed: int) -> None:
        fn(check_seed(seed, name))

    return seeded


def _rng_state_guard(name: str, fn: Callable[..., Any], backend: Backend) -> Callable[..., Any]:
    def set_rng_state(new_state: torch.Tensor, device: Any = None) -> None:
        fn(check_rng_state(new_state, name), device)

    return set_rng_state


def _rng_states_guard(name: str, fn: Callable[..., Any], backend: Backend) -> Callable[..., Any]:
    def set_rng_state_all(new_states: Sequence[torch.Tensor]) -> None:
        if isinstance(new_states, (torch.Tensor, str, bytes)) or not isinstance(new_states, Sequence):
            raise ArgumentTypeError(
                f"accel.{name}() takes a list of generator states (as accel.get_rng_state_all() returns), "
                f"not {type(new_states).__name__}"
            )
        fn([check_rng_state(s, name) for s in new_states])

    return set_rng_state_all


def _deterministic_guard(name: str, fn: Callable[..., Any], backend: Backend) -> Callable[..., Any]:
    def set_deterministic(flag: bool, warn_only: bool = False) -> None:
        fn(check_flag(flag, "flag", name), check_flag(warn_only, "warn_only", name))

    return set_deterministic


def _flag_guard(name: str, fn: Callable[..., Any], backend: Backend) -> Callable[..., Any]:
    def set_flag(flag: bool) -> None:
        fn(check_flag(flag, "flag", name))

    return set_flag


def _bf16_guard(name: str, fn: Callable[..., Any], backend: Backend) -> Callable[..., Any]:
    native = backend.is_bf16_native

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        return bool(fn()) if check_flag(including_emulation, "including_emulation", name) else native()

    return is_bf16_supported


def autocast_dtype_error(backend: Backend, dtype: Any) -> AccelError:
    """The error for ``accel.autocast(dtype=...)`` with a ``dtype`` that ``backend`` cannot autocast to.

    Raised by :meth:`Backend.autocast` itself (no wrapper frame on the per-step path).
    """
    if not isinstance(dtype, torch.dtype):
        return ArgumentTypeError(
            f"accel.autocast(dtype=...) takes a torch.dtype such as torch.bfloat16, not {type(dtype).__name__} {dtype!r}"
        )
    supported = ", ".join(str(d) for d in backend.supported_dtypes())
    return ArgumentValueError(
        f"backend {backend.name!r} cannot autocast to {dtype}; it autocasts to {supported} "
        "(see accel.supported_dtypes())"
    )


Guard = Callable[[str, Callable[..., Any], "Backend"], Callable[..., Any]]

#: Check name (the ``guard`` column of :mod:`.api`) -> wrapper factory
#: ``(public name, bound callable, backend) -> checked callable``.
CHECKS: dict[str, Guard] = {
    "seed": _seed_guard,
    "rng_state": _rng_state_guard,
    "rng_states": _rng_states_guard,
    "deterministic": _deterministic_guard,
    "flag": _flag_guard,
    "bf16": _bf16_guard,
}

#: Public name -> its wrapper factory, as the API table says.
GUARDED: dict[str, Guard] = {name: CHECKS[check] for name, check in GUARDS.items()}


def guard(name: str, fn: Callable[..., Any], backend: Backend) -> Callable[..., Any]:
    """``fn`` (bound for the public ``name``) with its arguments checked, or ``fn`` itself if unchecked."""
    factory = GUARDED.get(name)
    return fn if factory is None else factory(name, fn, backend)
