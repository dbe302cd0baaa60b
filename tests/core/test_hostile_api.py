"""Hostile use of the public API (issue 14): wrong types, odd dtypes, threads, before/after binding."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import torch

import accel_abstraction as accel
import accel_abstraction.runtime as runtime
from accel_abstraction import hookimpl
from accel_abstraction.errors import AccelError, ArgumentTypeError, ArgumentValueError, DeviceIndexError
from accel_abstraction.features import Availability
from accel_abstraction.interface import Backend
from accel_abstraction.plugins import get_host, register_plugin, reset
from accel_abstraction.registry import BackendSpec
from accel_abstraction.selection import build_backend
from accel_abstraction.settings import AccelSettings

# ----------------------------------------------------------------------------- wrong types


@pytest.mark.parametrize(
    ("call", "error", "expected"),
    [
        (lambda: accel.manual_seed("x"), ArgumentTypeError, "accel.manual_seed(seed) takes an integer, not str 'x'"),
        (lambda: accel.manual_seed(1.5), ArgumentTypeError, "takes an integer, not float 1.5"),
        (lambda: accel.manual_seed_all(None), ArgumentTypeError, "accel.manual_seed_all(seed) takes an integer"),
        (lambda: accel.manual_seed(2**70), ArgumentValueError, "outside the seed range"),
        (lambda: accel.set_rng_state("x"), ArgumentTypeError, "takes a generator state (a torch.uint8 tensor"),
        (lambda: accel.set_rng_state(torch.zeros(3)), ArgumentTypeError, "not a torch.float32 tensor"),
        (lambda: accel.set_rng_state_all("x"), ArgumentTypeError, "takes a list of generator states"),
        (lambda: accel.autocast(dtype="bf16"), ArgumentTypeError, "takes a torch.dtype such as torch.bfloat16"),
        (lambda: accel.set_deterministic("yes"), ArgumentTypeError, "takes True or False, not str 'yes'"),
        (lambda: accel.set_deterministic(True, warn_only="no"), ArgumentTypeError, "set_deterministic(warn_only)"),
        (lambda: accel.set_benchmark("on"), ArgumentTypeError, "accel.set_benchmark(flag) takes True or False"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_wrong_types_raise_an_accel_error_saying_what_was_expected(call, error, expected: str) -> None:  # type: ignore[no-untyped-def]
    for _ in ("before binding", "after binding"):
        with pytest.raises(error) as info:
            call()
        assert expected in str(info.value)
        assert isinstance(info.value, AccelError) and isinstance(info.value, (TypeError, ValueError))


def test_right_types_still_work() -> None:
    accel.manual_seed(3)
    first = torch.rand(2)
    accel.manual_seed(3)
    assert torch.equal(first, torch.rand(2))
    state = accel.get_rng_state()
    accel.set_rng_state(state)
    accel.set_benchmark(False)  # (set_deterministic's first call costs seconds: torch imports dynamo)
    accel.set_allow_tf32(1)
    with accel.autocast(dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("cpu")


@pytest.mark.parametrize("dtype", [torch.int8, torch.float64])
def test_autocast_to_a_dtype_the_backend_cannot_use_is_refused(dtype: torch.dtype) -> None:
    with pytest.raises(ArgumentValueError) as info:
        accel.autocast(dtype=dtype)
    assert str(info.value) == (
        f"backend 'cpu' cannot autocast to {dtype}; it autocasts to torch.float32, torch.bfloat16, "
        "torch.float16 (see accel.supported_dtypes())"
    )


# ----------------------------------------------------------------------------- before/after binding


def test_synchronize_of_a_missing_device_fails_before_and_after_binding() -> None:
    runtime.reset()
    with pytest.raises(DeviceIndexError):
        accel.synchronize(7)  # selects, then calls what got bound
    with pytest.raises(DeviceIndexError):
        accel.synchronize(7)  # the bound callable itself
    assert accel.synchronize() is None and accel.synchronize(0) is None


HOSTILE_ARGS: list[tuple[Any, ...]] = [
    (), (None,), (0,), (1,), (7,), (-1,), (True,), (1.5,), ("x",), ("cpu",), ("cpu:0",), ("cuda:0",),
    ("meta:0",), (torch.device("cpu"),), (0, 0),
]  # fmt: skip


def _outcome(fn: Any, args: tuple[Any, ...]) -> tuple[str, str]:
    try:
        result = fn(*args)
    except TypeError as exc:  # arity: the messages name the function differently
        if isinstance(exc, AccelError):
            return type(exc).__name__, str(exc)
        return "TypeError", ""
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "ok", repr(result)


@pytest.mark.parametrize("name", ["cpu", "cuda"])
def test_every_hot_binding_behaves_like_the_method_it_replaces(name: str) -> None:
    """A hot binding is an optimisation only: same results, same errors, for every argument."""
    entry = get_host().registry.get(name)
    backend = build_backend(entry, AccelSettings.load(backend=name))
    hot = dict(backend.hot_bindings())
    assert hot or name == "neuron"
    for public in hot:
        assert public in runtime.BOUND_NAMES, public
        slow = runtime.bound_callable(backend, public)
        fast = runtime.bound_callable(backend, public, hot)
        for args in HOSTILE_ARGS:
            assert _outcome(fast, args) == _outcome(slow, args), (name, public, args)


# ----------------------------------------------------------------------------- threads


class _Named(Backend):
    device_type = "cpu"

    def availability(self) -> Availability:
        return Availability.yes()


def _spec(name: str) -> BackendSpec:
    return BackendSpec(name, type(name, (_Named,), {"name": name}), priority=-10)


class _ThreadPlugin:
    @hookimpl
    def accel_register_backends(self, register):  # type: ignore[no-untyped-def]
        for name in ("t0", "t1", "t2", "t3"):
            register(_spec(name))


def test_concurrent_using_blocks_never_leave_the_wrong_backend() -> None:
    reset()
    register_plugin(_ThreadPlugin(), "threads")
    accel.use("t0")
    wrong: list[str] = []
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            for _ in range(15):
                with accel.using(name):
                    time.sleep(0.0005)
                    if accel.backend().name != name:
                        wrong.append(f"{name} saw {accel.backend().name}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("t1", "t2", "t3")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "using() deadlocked"
    assert not errors and not wrong
    assert accel.backend().name == "t0" and accel.device_type() == "cpu"


def test_using_nests_within_one_thread() -> None:
    reset()
    register_plugin(_ThreadPlugin(), "threads")
    accel.use("t0")
    with accel.using("t1"):
        with accel.using("t2"):
            assert accel.backend().name == "t2"
        assert accel.backend().name == "t1"
    assert accel.backend().name == "t0"
