"""The `accel` command: every subcommand is reachable, and only its own module is imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel_abstraction.cli import SUBCOMMANDS, main

from .conftest import run_python


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
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
    for name in SUBCOMMANDS:
        assert f"    {name} " in result.stdout
    assert result.stderr.strip() == "[]"
