"""pytest plugin: run tests on each selected accelerator backend.

Loaded for every pytest run through the ``pytest11`` entry point, so this module imports
only pytest and the standard library; torch and the backends load when a test asks for them.

* ``--accel-backend=cpu,neuron`` (or ``ACCEL_TEST_BACKENDS=cpu,neuron``; default ``cpu``):
  the backends the fixtures are parametrized over.
* ``accel_backend``: selects the backend with ``accel.using(name)`` for the duration of the
  test and yields the backend object. A test using it runs once per backend (``test_x[cpu]``,
  ``test_x[neuron]``); where a backend cannot run here, the test is skipped with the
  backend's own reason (``backend.availability().reason``).
* ``accel_device``: the selected backend's ``torch.device``.
* ``@pytest.mark.accel(requires=["fp16", "streams"])``: skips the test on a backend whose
  ``capabilities()`` lack a feature, naming the backend and the feature. On a test that does
  not use the fixtures, the backend checked (at collection) is the one the configuration selects.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..environment import read

if TYPE_CHECKING:
    import torch

    from accel_abstraction.interface import Backend

ENV_VAR = "ACCEL_TEST_BACKENDS"
DEFAULT_BACKENDS = ("cpu",)
_FIXTURES = ("accel_backend", "accel_device")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("accel", "accel-abstraction backends")
    group.addoption(
        "--accel-backend",
        dest="accel_backends",
        metavar="NAMES",
        default=None,
        help=(
            "comma-separated backends to run the accel_backend/accel_device fixtures on "
            f"(default: ${ENV_VAR}, else {','.join(DEFAULT_BACKENDS)})"
        ),
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "accel(requires=[...]): skip on a backend whose capabilities lack one of the named features "
        "(see accel_abstraction.Capabilities.known_features())",
    )


def selected_backends(config: pytest.Config) -> list[str]:
    """The backend names from ``--accel-backend``, else ``$ACCEL_TEST_BACKENDS``, else ``cpu``."""
    raw = config.getoption("accel_backends") or read(ENV_VAR) or ""
    names = [part.strip() for part in raw.split(",") if part.strip()]
    if not names:
        return list(DEFAULT_BACKENDS)
    return list(dict.fromkeys(names))  # keep order, drop repeats


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption("accel_backends") or read(ENV_VAR):
        return f"accel backends: {', '.join(selected_backends(config))}"
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not any(name in metafunc.fixturenames for name in _FIXTURES):
        return
    if _parametrized_by_the_test(metafunc):
        return  # @pytest.mark.parametrize("accel_backend", [...], indirect=True) pins the backends
    names = selected_backends(metafunc.config)
    metafunc.parametrize("accel_backend", names, indirect=True, ids=names)


def _parametrized_by_the_test(metafunc: pytest.Metafunc) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        if "accel_backend" in names:
            return True
    return False


def _required_features(marker: pytest.Mark) -> list[str]:
    features: list[Any] = list(marker.args)
    requires = marker.kwargs.get("requires", ())
    features.extend([requires] if isinstance(requires, str) else requires)
    return [str(f) for f in features]


def _skip_missing_features(item: pytest.Item, backend: Backend) -> None:
    marker = item.get_closest_marker("accel")
    if marker is None:
        return
    caps = backend.capabilities()
    for feature in _required_features(marker):
        if not caps.supports(feature):
            pytest.skip(_missing_reason(backend.name, feature))


def _missing_reason(backend: str, feature: str) -> str:
    return f"backend {backend!r} does not support {feature!r} (required by @pytest.mark.accel)"


def _unknown_backend_message(exc: Exception) -> str:
    from accel_abstraction.plugins import get_host

    failed = [r for r in get_host().records.values() if r.status == "failed"]
    msg = f"--accel-backend/{ENV_VAR}: {exc}"
    if failed:
        msg += " Plugins that failed to load: " + "; ".join(f"{r.name} ({r.error})" for r in failed)
    return msg


@pytest.fixture
def accel_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """The backend this test runs on, selected (``accel.using``) for the duration of the test."""
    import accel_abstraction as accel
    from accel_abstraction.emulation import emulated_if_needed, unavailable_message
    from accel_abstraction.errors import BackendUnavailableError, UnknownBackendError

    name = getattr(request, "param", None) or selected_backends(request.config)[0]
    problem = skip_reason = None
    with contextlib.ExitStack() as stack:
        try:
            refusal = stack.enter_context(emulated_if_needed(name))
            if refusal is not None:
                skip_reason = str(refusal)
            else:
                backend = stack.enter_context(accel.using(name))
        except UnknownBackendError as exc:
            problem = _unknown_backend_message(exc)
        except BackendUnavailableError as exc:
            skip_reason = str(exc)
        if problem is not None:  # outside the except block: a one-line report, no chained traceback
            pytest.fail(problem, pytrace=False)
        if skip_reason is not None:
            pytest.skip(skip_reason)
        from accel_abstraction.runtime import selection

        fell_back = selection()
        if fell_back.fell_back_from is not None:  # ACCEL_FALLBACK must not run a 'cuda' test on the cpu
            pytest.skip(unavailable_message(name, fell_back.fallback_reason))
        _skip_missing_features(request.node, backend)
        yield backend


@pytest.fixture
def accel_device(accel_backend: Backend) -> torch.device:
    """The ``torch.device`` of the backend this test runs on."""
    return accel_backend.device()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A marked test that does not use the fixtures is checked against the configured backend.
    # (Tests using accel_backend are checked inside the fixture, once their backend is selected.)
    marked = [
        item
        for item in items
        if item.get_closest_marker("accel") is not None
        and "accel_backend" not in getattr(item, "fixturenames", ())
    ]
    if not marked:
        return
    import accel_abstraction as accel
    from accel_abstraction.errors import BackendUnavailableError

    try:
        backend = accel.backend()
    except BackendUnavailableError as exc:
        reason = str(exc)
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=reason))
        return
    caps = backend.capabilities()
    for item in marked:
        marker = item.get_closest_marker("accel")
        assert marker is not None
        missing = [f for f in _required_features(marker) if not caps.supports(f)]
        if missing:
            item.add_marker(pytest.mark.skip(reason=_missing_reason(backend.name, missing[0])))
