"""The pytest plugin as a user of it sees it: parametrized fixtures, skip reasons, the capability marker."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch  # noqa: F401 - in-process pytester runs drop modules first imported inside them; torch loads once

import accel_abstraction.plugins  # noqa: F401 - the inner runs' conftest resets these same module objects
import accel_abstraction.runtime  # noqa: F401
from tests.testing import fakes  # noqa: F401

pytest_plugins = ["pytester"]

CONFTEST = """
import accel_abstraction.plugins as plugins
import accel_abstraction.runtime as runtime
from tests.testing import fakes

def pytest_configure(config):
    fakes.install()

def pytest_unconfigure(config):
    runtime.reset()
    plugins.reset()
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A test project whose conftest registers the fake backends; no ACCEL_* variable leaks in."""
    for key in list(os.environ):
        if key.startswith("ACCEL_"):
            monkeypatch.delenv(key)
    monkeypatch.syspath_prepend(os.getcwd())  # so the inner conftest imports tests.testing.fakes
    pytester.makeconftest(CONFTEST)
    return pytester


@pytest.fixture
def fixture_suite(suite: pytest.Pytester) -> pytest.Pytester:
    """:func:`suite` holding :data:`FIXTURE_TESTS` (a test using each fixture, and a plain one)."""
    suite.makepyfile(FIXTURE_TESTS)
    return suite


FIXTURE_TESTS = """
import torch
import accel_abstraction as accel

def test_selected(accel_backend, accel_device):
    assert accel.backend() is accel_backend
    assert accel.device() == accel_device == torch.device("cpu")
    torch.ones(2, device=accel_device)

def test_plain():
    pass
"""


def test_fixtures_default_to_cpu(fixture_suite: pytest.Pytester) -> None:
    result = fixture_suite.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_selected[[]cpu[]] PASSED*", "*test_plain PASSED*"])


def test_fixtures_are_parametrized_over_the_option(fixture_suite: pytest.Pytester) -> None:
    result = fixture_suite.runpytest("-v", "--accel-backend=cpu,fakecpu")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_selected[[]cpu[]] PASSED*", "*test_selected[[]fakecpu[]] PASSED*"])
    result.stdout.fnmatch_lines(["accel backends: cpu, fakecpu"])


def test_environment_variable_selects_backends(
    fixture_suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEL_TEST_BACKENDS", "fakecpu")
    result = fixture_suite.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_selected[[]fakecpu[]] PASSED*"])


def test_selection_is_restored_after_the_test(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        """
        import accel_abstraction as accel

        def test_a(accel_backend):
            assert accel.backend().name == "fakecpu"

        def test_b():
            assert accel.backend().name == "cpu"  # chosen from the configuration again
        """
    )
    suite.runpytest("--accel-backend=fakecpu", "-p", "no:randomly").assert_outcomes(passed=2)


def test_unavailable_backend_is_skipped_with_the_plugins_reason(fixture_suite: pytest.Pytester) -> None:
    result = fixture_suite.runpytest("-rs", "--accel-backend=cpu,fakeacc")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED*backend 'fakeacc' is not available: the fake accelerator is unplugged. To fix: plug it in"]
    )


EMULATED_TESTS = """
import os

def test_on(accel_device):
    assert os.environ.get("ACCEL_FAKEEMU_EMULATE") == "1"  # for this test only

def test_after():
    assert os.environ.get("ACCEL_FAKEEMU_EMULATE") != "1"  # restored after test_on
"""


def test_a_backend_with_an_emulation_runs_emulated_by_the_rule_accel_parity_follows(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accel_abstraction.emulation import backend_env, runnable_backends

    suite.makepyfile(EMULATED_TESTS)
    result = suite.runpytest("-v", "-p", "no:randomly", "--accel-backend=fakeemu")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_on[[]fakeemu[]] PASSED*"])
    fakes.install()
    try:  # accel parity's view of the same backend: emulated, and in its default list
        assert backend_env("fakeemu") == ({"ACCEL_BACKEND": "fakeemu", "ACCEL_FAKEEMU_EMULATE": "1"}, "")
        assert "fakeemu" in runnable_backends() and "fakeacc" not in runnable_backends()
        monkeypatch.setenv("ACCEL_FAKEEMU_EMULATE", "0")  # the user's word wins, in both
        changes, why_not = backend_env("fakeemu")
    finally:
        accel_abstraction.runtime.reset()
        accel_abstraction.plugins.reset()
    assert changes == {"ACCEL_BACKEND": "fakeemu"}
    message = "backend 'fakeemu' is not available: no fake hardware here. To fix: set ACCEL_FAKEEMU_EMULATE=1 to run on the CPU emulation"
    assert why_not == message
    result = suite.runpytest("-rs", "--accel-backend=fakeemu")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([f"SKIPPED*{message}"])


def test_unknown_backend_fails_and_lists_known_ones(fixture_suite: pytest.Pytester) -> None:
    result = fixture_suite.runpytest("--accel-backend=fakcpu")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*unknown backend 'fakcpu'*known backends:*fakecpu*Did you mean 'fakecpu'?*"]
    )


MARKER_TESTS = """
import pytest

@pytest.mark.accel(requires=["streams"])
def test_streams(accel_backend):
    assert accel_backend.capabilities().streams

@pytest.mark.accel(requires=["bf16", "fp8"])
def test_fp8(accel_device):
    raise AssertionError("must be skipped everywhere")

@pytest.mark.accel(requires=["streams"])
def test_without_fixture():
    raise AssertionError("the configured backend (cpu) has no streams")
"""


def test_capability_marker_skips_by_backend_and_feature(suite: pytest.Pytester) -> None:
    suite.makepyfile(MARKER_TESTS)
    result = suite.runpytest("-rs", "--strict-markers", "--accel-backend=cpu,fakecpu")
    result.assert_outcomes(passed=1, skipped=4)
    # -rs lines name the file and line of each test: test_streams :3, test_fp8 :7, test_without_fixture :11
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED*.py:3: backend 'cpu' does not support 'streams' (required by @pytest.mark.accel)",
            "SKIPPED*.py:7: backend 'cpu' does not support 'fp8'*",
            "SKIPPED*.py:7: backend 'fakecpu' does not support 'fp8'*",
            "SKIPPED*.py:11: backend 'cpu' does not support 'streams'*",
        ]
    )


def test_marker_is_registered(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.accel(requires=*"])


def test_loading_the_plugin_imports_no_torch() -> None:
    code = textwrap.dedent(
        """
        import sys
        import accel_abstraction.testing.pytest_plugin
        heavy = sorted(m for m in ("torch", "pydantic", "rich", "accel_abstraction.runtime") if m in sys.modules)
        print(heavy)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_a_test_can_pin_its_backends(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("accel_backend", ["fakecpu"], indirect=True)
        def test_pinned(accel_backend):
            assert accel_backend.name == "fakecpu"
        """
    )
    result = suite.runpytest("-v", "--accel-backend=cpu,fakeacc")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_pinned[[]fakecpu[]] PASSED*"])


def test_a_configured_fallback_does_not_stand_in_for_the_backend(
    fixture_suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEL_FALLBACK", "cpu")
    result = fixture_suite.runpytest("-rs", "-W", "ignore::RuntimeWarning", "--accel-backend=fakeacc")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*backend 'fakeacc' is not available: the fake accelerator is unplugged. To fix: plug it in"])
