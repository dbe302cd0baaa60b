"""Output fit for CI logs and issues: unwrapped lines off a terminal, ``accel info --format md``."""

from __future__ import annotations

import pytest

from accel_abstraction.cli import main


def test_an_error_off_a_terminal_is_one_whole_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # piped, as in CI: rich would wrap at 80 columns
    monkeypatch.setenv("ACCEL_BACKEND", "nueron")
    assert main(["info"]) == 1
    lines = capsys.readouterr().out.splitlines()
    error = [line for line in lines if line.startswith("no backend selected:")]
    assert error == [
        "no backend selected: unknown backend 'nueron' (from environment variable ACCEL_BACKEND); known backends: "
        "cpu, cuda, neuron, neuron-xla. Did you mean 'neuron'?"
    ]
    assert max(len(line) for line in lines) > 80  # tables take the width their cells need


def test_info_format_md_is_markdown_for_an_issue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## accel info\n\n### System\n\n- accel-abstraction: `")
    assert "| backend | priority | from | available |\n|---|---|---|---|\n" in out
    assert "| cpu (selected) | 0 | accel-cpu | yes |" in out
    assert "**Selected:** `cpu`" in out
    assert "│" not in out and "┃" not in out  # no box drawing
    assert main(["info", "--traceback"]) == 0  # the global flag's spelling is accepted too
