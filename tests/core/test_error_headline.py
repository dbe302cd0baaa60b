"""``errors.headline``: the one line every one-line report shows of an error (CLI, warnings, JSON)."""

from __future__ import annotations

import pytest

from accel_abstraction.errors import AccelError, headline
from accel_abstraction.exits import print_error


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (RuntimeError("first\nsecond"), "first"),
        (RuntimeError("\n  \n  indented first  \nsecond"), "indented first"),
        (RuntimeError(), "RuntimeError"),
        (AccelError("   \n\t"), "AccelError"),
        (KeyError("key"), "'key'"),
    ],
)
def test_headline_is_the_first_non_blank_line_or_the_type(exc: BaseException, line: str) -> None:
    assert headline(exc) == line


def test_the_cli_error_line_is_never_blank(capsys: pytest.CaptureFixture[str]) -> None:
    assert print_error(RuntimeError("\n\nreal cause\ndetail")) == 2
    assert capsys.readouterr().err == "accel: error: real cause\n"
