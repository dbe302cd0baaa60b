"""The `accel` command: every subcommand is reachable, only its own module is imported, plugins add commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel_abstraction.cli import main
from accel_abstraction.commands import BUILTIN_COMMANDS

from .conftest import make_plugin_dist, run_cli, run_python

BUILTIN_NAMES = sorted(spec.name for spec in BUILTIN_COMMANDS)


@pytest.mark.parametrize("command", BUILTIN_NAMES)
def test_every_subcommand_parses(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert f"usage: accel {command}" in capsys.readouterr().out


def test_top_level_help_lists_all_without_importing_them(tmp_path: Path) -> None:
    code = """
        import sys
        from accel_abstraction.cli import main
        try:
            main(["--help"])
        except SystemExit:
            pass
        print([m for m in ("torch", "libcst", "pydantic") if m in sys.modules], file=sys.stderr)
    """
    result = run_python(code, cwd=tmp_path)
    for name in BUILTIN_NAMES:
        assert f"    {name} " in result.stdout
    assert result.stderr.strip() == "[]"


HELLO_PLUGIN = """
    from accel_abstraction import hookimpl
    from accel_abstraction.commands import CommandSpec

    @hookimpl
    def accel_register_commands(register):
        register(CommandSpec("hello", "say hello from a third-party plugin", "hello_cmd"))
        register(CommandSpec("scan", "a clash with the built-in scan", "hello_cmd"))
"""

HELLO_MODULE = """
def add_parser(subparsers):
    p = subparsers.add_parser("hello", help="say hello")
    p.add_argument("who")
    p.set_defaults(func=lambda args: print(f"hello {args.who}") or 3)
"""


def test_a_plugin_adds_a_subcommand_through_the_hook(tmp_path: Path) -> None:
    make_plugin_dist(tmp_path, "hello", HELLO_PLUGIN)
    (tmp_path / "hello_cmd.py").write_text(HELLO_MODULE)
    result = run_cli("hello", "world", pythonpath=tmp_path)
    assert result.returncode == 3, result.stderr
    assert result.stdout.strip() == "hello world"
    # the clash is refused with a warning naming both; the built-in scan still runs
    assert "'hello' registers command 'scan', which 'accel-builtin-commands' already provides" in result.stderr
    listing = run_cli("--help", pythonpath=tmp_path)
    assert "say hello from a third-party plugin" in listing.stdout
    scan = run_cli("scan", str(tmp_path / "hello_cmd.py"), pythonpath=tmp_path)
    assert scan.returncode == 0, scan.stderr


def test_a_plugin_whose_command_hook_raises_leaves_the_others_usable(tmp_path: Path) -> None:
    make_plugin_dist(
        tmp_path,
        "broken",
        """
        from accel_abstraction import hookimpl

        @hookimpl
        def accel_register_commands(register):
            raise OSError("disk on fire")
        """,
    )
    result = run_cli("scan", "--help", pythonpath=tmp_path)
    assert result.returncode == 0
    assert "'broken' (fake-broken) was partly ignored: accel_register_commands raised: OSError: disk on fire" in result.stderr


def test_accel_info_freezes_torchs_heap_only_as_its_own_process(tmp_path: Path) -> None:
    # a full collection scanning torch's import-time objects cost accel info ~80 ms (bench_core);
    # as a process of its own it freezes them; called as a function it leaves the host's collector alone
    code = """
        import contextlib, gc, io, sys
        from accel_abstraction import cli
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main(["info"]) == 0
        as_function = gc.get_freeze_count()
        sys.argv = ["accel", "info"]
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            cli.run()
        print(as_function, gc.get_freeze_count() > 50_000, file=sys.stderr)
    """
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "0 True"
