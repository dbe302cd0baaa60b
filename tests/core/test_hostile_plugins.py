"""Hostile plugins (issue 14): one broken plugin is isolated and named; `accel info` never crashes.

Plugins are registered in code (``register_plugin``), which goes through the same loading
and isolation as an entry point, in-process: no interpreter start per case.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import accel_abstraction as accel
from accel_abstraction import hookimpl
from accel_abstraction.cli import main
from accel_abstraction.errors import BackendUnavailableError, PluginError
from accel_abstraction.features import Availability
from accel_abstraction.interface import Backend
from accel_abstraction.plugins import get_host, register_plugin, reset
from accel_abstraction.registry import BackendSpec


class _Good(Backend):
    name = "gooddev"
    device_type = "cpu"

    def availability(self) -> Availability:
        return Availability.yes()


class _ProbeRaises(Backend):
    name = "flaky"
    device_type = "cpu"

    def availability(self) -> Availability:
        raise OSError("cannot open /dev/flaky0")


class _Plugin:
    """A plugin built from keyword hooks: only the hooks given are implemented."""

    def __init__(self, **hooks: Any) -> None:
        for name, fn in hooks.items():
            setattr(self, name, hookimpl(fn))


def _install(**plugins: _Plugin) -> None:
    reset()
    for name, plugin in plugins.items():
        register_plugin(plugin, name)


def _info_json(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["info", "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_env_info_returning_a_non_list_is_shown_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    _install(
        answer=_Plugin(accel_env_info=lambda backend: 42),
        fine=_Plugin(accel_env_info=lambda backend: [("fine row", "yes")]),
    )
    code, report = _info_json(capsys)
    assert code == 0
    assert ["fine row", "yes"] in report["environment"]
    assert report["environment_errors"] == [
        "plugin 'answer' (accel_env_info): returned int 42, not a list of (key, value) pairs"
    ]
    assert main(["info"]) == 0
    assert "returned int 42" in capsys.readouterr().out


def test_availability_that_raises_is_isolated_and_named(capsys: pytest.CaptureFixture[str]) -> None:
    def register(register):  # type: ignore[no-untyped-def]
        register(BackendSpec("flaky", _ProbeRaises, priority=500))

    _install(flakyplugin=_Plugin(accel_register_backends=register))
    with pytest.warns(RuntimeWarning, match=r"availability\(\) of backend 'flaky' .* raised OSError"):
        assert accel.device().type == "cpu"  # auto skips it
    code, report = _info_json(capsys)
    assert code == 0 and report["selected"]["name"] == "cpu"
    row = {b["name"]: b for b in report["backends"]}["flaky"]
    assert row["available"] is False
    assert "availability() of backend 'flaky' from (registered in code) (plugin 'flakyplugin') raised OSError: cannot open /dev/flaky0" in row["reason"]
    with pytest.raises(BackendUnavailableError, match=r"plugin 'flakyplugin'\) raised OSError"):
        accel.use("flaky")


def test_availability_raising_does_not_matter_when_another_backend_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def register(register):  # type: ignore[no-untyped-def]
        register(BackendSpec("flaky", _ProbeRaises, priority=500))

    _install(flakyplugin=_Plugin(accel_register_backends=register))
    monkeypatch.setenv("ACCEL_BACKEND", "cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert accel.device().type == "cpu"


def test_backend_selected_raising_is_one_line_in_the_cli_and_raw_for_callers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def selected(backend, settings):  # type: ignore[no-untyped-def]
        raise RuntimeError("cannot export FOO_VISIBLE_CORES\nsecond line")

    _install(noisy=_Plugin(accel_backend_selected=selected))
    with pytest.raises(RuntimeError, match="cannot export") as info:
        accel.use("cpu")
    assert info.value.accel_plugin == "noisy"
    code, report = _info_json(capsys)
    assert code == 1 and report["selected"] is None
    assert report["selection_error"] == (
        "plugin 'noisy' failed in accel_backend_selected: RuntimeError: cannot export FOO_VISIBLE_CORES"
    )
    assert main(["info"]) == 1
    out = capsys.readouterr().out
    assert "plugin 'noisy' failed in accel_backend_selected" in out and "Traceback" not in out


def test_duplicate_name_and_non_spec_registrations_fail_only_their_plugin(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def first(register):  # type: ignore[no-untyped-def]
        register(BackendSpec("gooddev", _Good, priority=-1))

    def dup(register):  # type: ignore[no-untyped-def]
        register(BackendSpec("otherdev", _Good, priority=-2))  # would be fine alone: all or nothing
        register(BackendSpec("CPU", _Good))

    def junk(register):  # type: ignore[no-untyped-def]
        register({"name": "dictdev"})

    def odd(register):  # type: ignore[no-untyped-def]
        register(BackendSpec("odddev", _Good, priority="high"))  # would break sorting for everyone

    _install(
        first=_Plugin(accel_register_backends=first),
        dup=_Plugin(accel_register_backends=dup),
        junk=_Plugin(accel_register_backends=junk),
        odd=_Plugin(accel_register_backends=odd),
    )
    with pytest.warns(RuntimeWarning) as caught:
        host = get_host()
    messages = " | ".join(str(w.message) for w in caught)
    assert "plugin 'dup' ((registered in code)) was not loaded: backend name 'cpu' is registered twice" in messages
    assert "plugin 'junk' ((registered in code)) was not loaded" in messages and "takes an accel_abstraction.BackendSpec" in messages
    assert host.registry.names() == ["cpu", "cuda", "gooddev", "neuron", "neuron-xla"]
    assert accel.use("cpu").name == "cpu" and accel.use("gooddev").name == "gooddev"
    code, report = _info_json(capsys)
    status = {p["name"]: p["status"] for p in report["plugins"]}
    assert status["dup"] == status["junk"] == status["odd"] == "failed" and status["first"] == "loaded"
    assert "with priority 'high': a number is needed" in messages


def test_register_style_hook_isolates_junk_per_plugin() -> None:
    """The path `accel scan` collects plugin rules through: junk from one plugin drops that plugin only."""

    def check(item: object) -> None:
        if not isinstance(item, str):
            raise PluginError(f"expected a rule name, got {type(item).__name__}")

    def good(register):  # type: ignore[no-untyped-def]
        register("GOOD1")

    def junk(register):  # type: ignore[no-untyped-def]
        register("JUNK-OK")
        register(12345)

    def boom(register):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("bad plugin")

    _install(
        good=_Plugin(accel_scan_rules=good), junk=_Plugin(accel_scan_rules=junk), boom=_Plugin(accel_scan_rules=boom)
    )
    host = get_host()
    with pytest.warns(RuntimeWarning) as caught:
        got = host.collect("accel_scan_rules", check)
    assert got == [("good", "GOOD1")]
    text = " | ".join(str(w.message) for w in caught)
    assert "plugin 'junk'" in text and "expected a rule name, got int" in text
    assert "plugin 'boom'" in text and "ZeroDivisionError: bad plugin" in text
    assert host.records["junk"].problems and host.records["junk"].status == "loaded"


def test_info_keeps_brackets_of_config_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.accel]\nbackend = "cpu"\nbakend = "x"\n')
    reset()
    assert main(["info"]) == 1
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "unknown key 'bakend' in [tool.accel]" in out


def test_junk_scan_rule_drops_only_its_plugin() -> None:
    from accel_abstraction.porting.rules import BUILTIN_RULES, Rule
    from accel_abstraction.porting.runner import load_rules

    good_rule = Rule("MYL001", "manual", "uses mylib.cuda", names=("mylib.cuda",))

    def good(register):  # type: ignore[no-untyped-def]
        register(good_rule)

    def junk(register):  # type: ignore[no-untyped-def]
        register(Rule("MYL002", "manual", "fine on its own", names=("mylib.x",)))
        register("not a rule")

    def clash(register):  # type: ignore[no-untyped-def]
        register(Rule(BUILTIN_RULES[0].code, "manual", "steals a built-in code", names=("y",)))

    _install(
        good=_Plugin(accel_scan_rules=good), junk=_Plugin(accel_scan_rules=junk), clash=_Plugin(accel_scan_rules=clash)
    )
    with pytest.warns(RuntimeWarning) as caught:
        rules = load_rules()
    assert rules == (*BUILTIN_RULES, good_rule)
    text = " | ".join(str(w.message) for w in caught)
    assert "plugin 'junk'" in text and "register() takes accel_abstraction.porting.rules.Rule, got str" in text
    assert "plugin 'clash'" in text and f"rule code {BUILTIN_RULES[0].code} is registered twice" in text


class _Chatty(Backend):
    name = "chatty"
    device_type = "cpu"

    def __init__(self) -> None:
        print("chatty: factory here")

    def availability(self) -> Availability:
        print("chatty: probing")
        return Availability.no("no chatty device here")


def test_prints_from_a_factory_and_a_probe_never_reach_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    def register(register):  # type: ignore[no-untyped-def]
        register(BackendSpec("chatty", lambda settings: _Chatty(), priority=500))

    _install(chattyplugin=_Plugin(accel_register_backends=register))
    assert main(["info", "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # stdout is the JSON document only
    assert {b["name"]: b for b in report["backends"]}["chatty"]["available"] is False
    assert "chatty: factory here" in captured.err and "chatty: probing" in captured.err
    assert "of backend 'chatty' from (registered in code) (plugin 'chattyplugin')" in captured.err
