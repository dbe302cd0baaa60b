"""The public API is declared once (accel_abstraction/api.py): the stubs, the bound names, the guards,
the lazily served names and `__all__` follow that table, and this file fails when they drift."""

from __future__ import annotations

import inspect

import pytest

import accel_abstraction as accel
from accel_abstraction import api, arguments, runtime
from accel_abstraction.errors import CapabilityError
from accel_abstraction.interface import Backend


def test_every_public_function_of_the_package_is_a_row() -> None:
    defined = {
        name
        for name, obj in vars(accel).items()
        if not name.startswith("_") and inspect.isfunction(obj) and obj.__module__ == accel.__name__
    }
    assert defined - set(api.ALL) == set()
    assert len(api.ALL) == len(set(api.ALL)), "a name is declared twice"


def test_stubs_are_exactly_the_bound_and_state_rows() -> None:
    assert set(accel._STUBS) == set(api.BOUND) | set(api.STATE)
    for name, stub in accel._STUBS.items():
        assert stub.__doc__, f"accel.{name} has no docstring"


def test_each_stub_takes_what_the_backend_method_it_is_rebound_to_takes() -> None:
    # The stub answers before the first selection, the backend's method after it (wrapped in its
    # argument check where the API table names one): a keyword that works on one must work on the
    # other, with the same default.
    backend = Backend()
    for name in api.BOUND:
        method = getattr(Backend, name)
        if not callable(method) or isinstance(method, type):  # Stream, Event: the backend's classes
            continue
        stub = [(p.name, p.kind, p.default) for p in inspect.signature(accel._STUBS[name]).parameters.values()]
        target = arguments.guard(name, getattr(backend, name), backend)
        bound = [(p.name, p.kind, p.default) for p in inspect.signature(target).parameters.values()]
        assert stub == bound, f"accel.{name} and what it is rebound to take different arguments"


def test_every_bound_name_is_a_backend_attribute_and_every_guard_exists() -> None:
    for name in api.BOUND:
        assert hasattr(Backend, name), f"Backend has no {name!r} for accel.{name} to be bound to"
    assert runtime.BOUND_NAMES == api.BOUND
    assert {"Stream", "Event"} <= set(runtime.BOUND_NAMES)
    assert set(arguments.GUARDED) <= set(api.BOUND)
    assert set(api.GUARDS.values()) == set(arguments.CHECKS)  # no check declared and unused


def test_lazy_names_resolve_from_their_module() -> None:
    for name, module in api.LAZY.items():
        value = getattr(accel, name)
        assert getattr(__import__(f"accel_abstraction.{module}", fromlist=[name]), name) is value
    assert set(api.ALL) <= set(dir(accel))


def test_import_star_exports_the_api_and_nothing_else() -> None:
    namespace: dict[str, object] = {}
    exec("from accel_abstraction import *", namespace)  # noqa: S102 - the statement under test
    namespace.pop("__builtins__")
    assert sorted(namespace) == sorted(api.ALL)


def test_stream_and_event_are_bound_and_say_when_the_backend_has_none() -> None:
    accel.use("cpu")
    assert not accel.capabilities().streams
    for name in ("Stream", "Event"):
        with pytest.raises(CapabilityError, match="does not support"):
            getattr(accel, name)()
