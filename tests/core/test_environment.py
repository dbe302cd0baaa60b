"""accel_abstraction.environment: the one layer that reads process-level ACCEL_* variables."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from accel_abstraction import hookimpl
from accel_abstraction.environment import EnvVar, UndeclaredVariableError, flag, process_variables, read
from accel_abstraction.errors import AccelError
from accel_abstraction.plugins import register_plugin, reset

OWN = EnvVar("ACCEL_MYPLUGIN_TRACE", "user", "myplugin.trace", "1: trace the plugin's calls.")


def test_read_and_flag_take_declared_rows_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_PLUGINS", "cpu")
    assert read("ACCEL_PLUGINS") == "cpu"
    assert read("ACCEL_PLUGINS", {}) is None  # another environment (a child's)
    assert read(OWN, {"ACCEL_MYPLUGIN_TRACE": "1"}) == "1"  # a plugin's own row
    with pytest.raises(UndeclaredVariableError, match=r"'ACCEL_NOPE' is not a process variable") as info:
        read("ACCEL_NOPE")
    assert isinstance(info.value, AccelError)
    with pytest.raises(UndeclaredVariableError):
        read("ACCEL_BACKEND")  # a setting: read by its section, not here


@pytest.mark.parametrize(
    ("value", "on"), [("1", True), (" TRUE ", True), ("yes", True), ("on", True), ("0", False), ("", False), ("2", False)]
)
def test_flag_words(value: str, on: bool) -> None:
    assert flag("ACCEL_DISABLE_PLUGIN_AUTOLOAD", {"ACCEL_DISABLE_PLUGIN_AUTOLOAD": value}) is on
    assert flag("ACCEL_DISABLE_PLUGIN_AUTOLOAD", {}) is False


class _Declares:
    @hookimpl
    def accel_process_variables(self, register):  # type: ignore[no-untyped-def]
        register(OWN)


class _Junk:
    @hookimpl
    def accel_process_variables(self, register):  # type: ignore[no-untyped-def]
        register("ACCEL_JUNK")


class _Steals:
    @hookimpl
    def accel_process_variables(self, register):  # type: ignore[no-untyped-def]
        register(EnvVar("ACCEL_PLUGINS", "user", "x", "mine now"))


@pytest.fixture
def plugins() -> Iterator[None]:
    reset()
    register_plugin(_Declares(), "declares")
    register_plugin(_Junk(), "junk")
    register_plugin(_Steals(), "steals")
    yield
    reset()


@pytest.mark.usefixtures("plugins")
def test_plugins_declare_their_variables_and_junk_is_refused_with_a_warning() -> None:
    with pytest.warns(RuntimeWarning) as warned:
        rows = process_variables()
    owners = {row.name: owner for owner, row in rows}
    assert owners["ACCEL_MYPLUGIN_TRACE"] == "declares"
    assert owners["ACCEL_PLUGINS"] == "core"  # a plugin cannot take over a core row
    assert "ACCEL_JUNK" not in owners
    messages = " ".join(str(w.message) for w in warned)
    assert "takes an accel_abstraction.environment.EnvVar" in messages
    assert "ACCEL_PLUGINS is a variable of accel_abstraction itself" in messages
