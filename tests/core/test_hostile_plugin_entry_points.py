"""Hostile third-party plugins shipped as entry points (issue 38): whatever a plugin's import
or hook does, the host keeps working, names the plugin, and keeps machine-readable output clean.

The distributions are real ones on ``sys.path`` (``make_plugin_dist``), found by
importlib.metadata in this process like an installed third-party package.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import accel_abstraction as accel
from accel_abstraction.cli import main
from accel_abstraction.plugins import get_host, reset

from ..hostile.tries import PLUGIN_BACKEND as BACKEND
from .conftest import make_plugin_dist, run_cli


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` for fake distributions; their modules are forgotten after the test."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)
    reset()
    yield root
    reset()
    for name in set(sys.modules) - before:
        if name.endswith("_plugin"):
            del sys.modules[name]


def _load() -> tuple[Any, str]:
    """The loaded host, and the warnings it gave, joined."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        host = get_host()
    return host, " | ".join(str(w.message) for w in caught)


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ("import sys\nsys.exit(3)\n", "import failed: SystemExit: 3"),
        ("class Stop(BaseException):\n    pass\nraise Stop('no')\n", "import failed: Stop: no"),
        ("raise GeneratorExit('odd')\n", "import failed: GeneratorExit: odd"),
    ],
)
def test_base_exception_at_import_is_the_plugins_recorded_failure(
    site: Path, body: str, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make_plugin_dist(site, "exiter", body)
    host, said = _load()
    assert host.records["exiter"].status == "failed" and host.records["exiter"].error == shown
    assert "plugin 'exiter' (fake-exiter) was not loaded" in said
    assert accel.device().type == "cpu"  # the user's training script goes on
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {p["name"]: p["error"] for p in report["plugins"]}["exiter"] == shown


def test_base_exception_in_a_hook_fails_that_plugin_only(site: Path) -> None:
    make_plugin_dist(
        site,
        "hookexit",
        "from accel_abstraction import hookimpl\n@hookimpl\ndef accel_register_backends(register):\n"
        "    raise SystemExit('bye')\n",
    )
    host, said = _load()
    assert host.records["hookexit"].status == "failed"
    assert "accel_register_backends raised SystemExit: bye" in host.records["hookexit"].error
    assert "cpu" in host.registry.names()


def test_keyboard_interrupt_at_import_still_interrupts(site: Path) -> None:
    make_plugin_dist(site, "ctrlc", "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        get_host()


def test_plugin_stdout_is_captured_and_shown_in_info(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = BACKEND.format(name="chatty", priority=-5) + (
        "print('hello from the import')\n"
        "@hookimpl\ndef accel_env_info(backend):\n    print('hello from a hook')\n    return [('chatty', 'yes')]\n"
    )
    make_plugin_dist(site, "chatty", source)
    assert main(["info", "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out)  # nothing printed before or inside the JSON
    record = {p["name"]: p for p in report["plugins"]}["chatty"]
    assert record["output"] == "hello from the import\nhello from a hook\n"
    assert main(["info"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "plugin 'chatty' printed on stdout (captured): hello from the import | hello from a hook" in text


def test_scan_json_and_sarif_stay_valid_with_a_chatty_plugin(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_plugin_dist(
        site,
        "chattyrules",
        "print('import noise')\nfrom accel_abstraction import hookimpl\n"
        "@hookimpl\ndef accel_scan_rules(register):\n    print('hook noise')\n",
    )
    (site.parent / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    for fmt in ("json", "sarif"):
        main(["scan", "--format", fmt, "a.py"])
        doc = json.loads(capsys.readouterr().out)
        assert "noise" not in json.dumps(doc)


def test_a_third_party_cpu_backend_loses_to_the_built_in_and_is_named(site: Path) -> None:
    make_plugin_dist(site, "aaa", BACKEND.format(name="cpu", priority=1000))  # sorts before "cpu"
    host, said = _load()
    assert host.records["cpu"].status == "loaded" and host.records["cpu"].backends == ["cpu"]
    assert host.records["aaa"].status == "failed"
    assert "backend name 'cpu' is registered twice: by accel-cpu (plugin 'cpu') and by plugin 'aaa' (fake-aaa)" in said
    assert accel.use("cpu").name == "cpu" and type(accel.backend()).__module__ == "accel_cpu.backend"


def test_a_third_party_command_named_like_a_built_in_loses_and_is_named(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_plugin_dist(
        site,
        "aacmd",
        "from accel_abstraction import hookimpl\nfrom accel_abstraction.commands import CommandSpec\n"
        "@hookimpl\ndef accel_register_commands(register):\n    register(CommandSpec('info', 'mine', 'os'))\n",
    )
    with pytest.warns(RuntimeWarning, match="plugin 'aacmd' registers command 'info', which 'accel-builtin-commands'"):
        assert main(["info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["selected"]["name"] == "cpu"


def test_two_distributions_with_one_entry_point_name_are_both_named(site: Path) -> None:
    make_plugin_dist(site, "twin", BACKEND.format(name="twina", priority=-5), dist="dist-one")
    # a second distribution offering the entry point "twin" with another module
    (site / "twin2_plugin.py").write_text(BACKEND.format(name="twinb", priority=-5))
    info = site / "dist_two-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dist-two\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[accel_abstraction]\ntwin = twin2_plugin\n")
    host, said = _load()
    names = host.registry.names()
    assert ("twina" in names) != ("twinb" in names)  # one loads
    dropped = [r for r in host.records.values() if r.name.startswith("twin (")]
    assert len(dropped) == 1 and dropped[0].status == "failed"
    assert "entry point name 'twin' is also offered by" in dropped[0].error
    both = dropped[0].error + " " + dropped[0].distribution
    assert "dist-one" in both and "dist-two" in both
    assert "entry point name 'twin' is also offered by" in said


def test_a_slow_import_is_abandoned_and_named(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_plugin_dist(site, "sleeper", "import time\nwhile True:\n    time.sleep(0.05)\n")
    monkeypatch.setenv("ACCEL_PLUGIN_IMPORT_TIMEOUT", "0.3")
    host, said = _load()
    assert host.records["sleeper"].status == "failed"
    assert "import took longer than 0.3 s and was abandoned" in host.records["sleeper"].error
    assert "ACCEL_PLUGIN_IMPORT_TIMEOUT" in said and accel.device().type == "cpu"
    assert "sleeper_plugin" not in sys.modules


def test_a_slow_import_that_swallows_exceptions_is_still_abandoned(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_plugin_dist(site, "stubborn", "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except Exception:\n        pass\n")
    monkeypatch.setenv("ACCEL_PLUGIN_IMPORT_TIMEOUT", "0.3")
    host, _ = _load()
    assert host.records["stubborn"].status == "failed"


def test_a_slow_import_of_another_package_is_never_cut_half_way(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cutting torch's import half-way would leave its operator registrations behind and make
    the next ``import torch`` fail; the bound waits for another package's import to end."""
    (site / "slowdep_xyz.py").write_text("import time\ntime.sleep(0.8)\nDONE = True\n")
    make_plugin_dist(site, "patient", "import slowdep_xyz\n" + BACKEND.format(name="patientdev", priority=-5))
    monkeypatch.setenv("ACCEL_PLUGIN_IMPORT_TIMEOUT", "0.2")
    try:
        host, _ = _load()
        assert host.records["patient"].status == "loaded" and "patientdev" in host.registry.names()
        assert sys.modules["slowdep_xyz"].DONE is True
    finally:
        sys.modules.pop("slowdep_xyz", None)


@pytest.mark.parametrize("value", ["-1", "abc", "nan", "inf"])
def test_a_bad_import_timeout_is_one_config_error(site: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ACCEL_PLUGIN_IMPORT_TIMEOUT", value)
    with pytest.raises(accel.ConfigError, match=f"ACCEL_PLUGIN_IMPORT_TIMEOUT={value!r} is not a number of seconds"):
        get_host()


def test_a_broken_plugin_command_is_listed_as_broken_and_the_others_work(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_plugin_dist(
        site,
        "brokencmd",
        "from accel_abstraction import hookimpl\nfrom accel_abstraction.commands import CommandSpec\n"
        "@hookimpl\ndef accel_register_commands(register):\n"
        "    register(CommandSpec('profile', 'profile a step', 'no_such_module_xyz'))\n",
    )
    assert main(["profile", "--fast", "x"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "accel: error: command 'profile' is broken: its module 'no_such_module_xyz' could not be loaded "
        "(ModuleNotFoundError: No module named 'no_such_module_xyz'); reinstall or uninstall the plugin "
        "that provides it (accel info lists plugins)"
    ]
    assert main(["profile", "--help"]) == 2  # its help cannot be built either: the same line
    assert "command 'profile' is broken" in capsys.readouterr().err
    assert main(["info", "--json"]) == 0  # the other commands work


@pytest.mark.slow
def test_sys_exit_at_import_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """What a user sees: `accel info` and a training script both keep working."""
    make_plugin_dist(tmp_path, "quitter", "import sys\nprint('noise')\nsys.exit(3)\n")
    got = run_cli("info", "--json", pythonpath=tmp_path)
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    assert {p["name"]: p["status"] for p in report["plugins"]}["quitter"] == "failed"
    assert "Traceback" not in got.stderr
