"""``PluginHost.call_each`` keeps pluggy's semantics (issue 38): each rule checked against what
pluggy itself does for the same plugins (``pm.hook.<name>()``), so a plugin author's
``tryfirst``/``trylast`` mean here what pluggy's documentation says."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from accel_abstraction import hookimpl
from accel_abstraction.plugins import PluginHost


class _Rows:
    """A plugin whose ``accel_env_info`` answers its own name."""

    def __init__(self, name: str, **marks: bool) -> None:
        self.name = name

        def accel_env_info(backend: Any) -> list[tuple[str, str]]:
            return [(name, "row")]

        self.accel_env_info = hookimpl(**marks)(accel_env_info)


def _host(*plugins: _Rows) -> PluginHost:
    host = PluginHost()
    for plugin in plugins:
        host.pm.register(plugin, name=plugin.name)
    return host


def _order_each(host: PluginHost) -> list[str]:
    return [call.plugin for call in host.call_each("accel_env_info", backend=None)]


def _order_pluggy(host: PluginHost) -> list[str]:
    return [rows[0][0] for rows in host.pm.hook.accel_env_info(backend=None)]


def test_plain_hooks_run_in_pluggys_order_last_registered_first() -> None:
    host = _host(_Rows("a"), _Rows("b"), _Rows("c"))
    assert _order_each(host) == _order_pluggy(host) == ["c", "b", "a"]


def test_tryfirst_runs_first_as_in_pluggy() -> None:
    host = _host(_Rows("a", tryfirst=True), _Rows("b"), _Rows("c"))
    assert _order_each(host) == _order_pluggy(host) == ["a", "c", "b"]


def test_trylast_runs_last_as_in_pluggy() -> None:
    host = _host(_Rows("a"), _Rows("b"), _Rows("c", trylast=True))
    assert _order_each(host) == _order_pluggy(host) == ["b", "a", "c"]


def test_tryfirst_and_trylast_together_as_in_pluggy() -> None:
    host = _host(_Rows("x", trylast=True), _Rows("y", tryfirst=True), _Rows("z"), _Rows("w", tryfirst=True))
    assert _order_each(host) == _order_pluggy(host) == ["w", "y", "z", "x"]


class _Wrapper:
    def __init__(self, new_style: bool) -> None:
        self.ran = False

        def accel_env_info(backend: Any) -> Iterator[None]:
            self.ran = True
            result = yield
            return result

        marks = {"wrapper": True} if new_style else {"hookwrapper": True}
        self.accel_env_info = hookimpl(**marks)(accel_env_info)


@pytest.mark.parametrize("new_style", [True, False])
def test_a_hook_wrapper_is_refused_with_a_clear_error_on_its_plugin(new_style: bool) -> None:
    wrapper = _Wrapper(new_style)
    host = _host(_Rows("a"))
    host.pm.register(wrapper, name="wrapping")
    host.pm.hook.accel_env_info(backend=None)
    assert wrapper.ran  # pluggy runs it around its one call of all implementations...
    wrapper.ran = False
    with pytest.warns(RuntimeWarning, match="plugin 'wrapping' .* its accel_env_info is a hook wrapper, which accel does not run"):
        assert _order_each(host) == ["a"]
    assert not wrapper.ran  # ...which plugin-by-plugin calling never makes: refused, and said
    problems = host.record_of("wrapping").problems
    assert len(problems) == 1 and "implement accel_env_info as a plain hook" in problems[0]
    _order_each(host)
    assert len(host.record_of("wrapping").problems) == 1  # said once


def test_isolation_kept_where_pluggy_would_stop_at_the_first_error() -> None:
    class Boom:
        @hookimpl
        def accel_env_info(self, backend: Any) -> list[tuple[str, str]]:
            raise SystemExit(4)

    host = _host(_Rows("a"), _Rows("b"))
    host.pm.register(Boom(), name="boom")  # called first
    with pytest.raises(SystemExit):
        host.pm.hook.accel_env_info(backend=None)
    calls = list(host.call_each("accel_env_info", backend=None))
    assert [c.plugin for c in calls] == ["boom", "b", "a"]
    assert isinstance(calls[0].error, SystemExit) and calls[1].value == [("b", "row")]


def test_hook_arguments_are_passed_by_name_as_in_pluggy() -> None:
    seen: list[Any] = []

    class Selected:
        @hookimpl
        def accel_backend_selected(self, settings: Any, backend: Any) -> None:  # reversed order on purpose
            seen.append((backend, settings))

    host = PluginHost()
    host.pm.register(Selected(), name="sel")
    list(host.call_each("accel_backend_selected", backend="B", settings="S"))
    host.pm.hook.accel_backend_selected(backend="B", settings="S")
    assert seen == [("B", "S"), ("B", "S")]
