"""The mapping table drives the scanner, the codemod, the redirect's hints and the docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel_abstraction.porting import docs, port_source, scan_source
from accel_abstraction.porting.mapping import RAISES, SAME, TABLE, hint_for, lookup
from accel_abstraction.porting.rules import RULES_BY_CODE

CALL_ROWS = [r for r in TABLE if r.kind == "call"]


def test_committed_docs_match_the_tables() -> None:
    path = Path(docs.__file__).resolve().parents[2] / "docs" / "porting.md"
    text = path.read_text(encoding="utf-8")
    assert docs.render(text) == text, "docs/porting.md is stale: run python -m accel_abstraction.porting.docs"


def test_every_row_names_a_known_rule_and_says_what_to_do() -> None:
    for row in TABLE:
        assert row.code in RULES_BY_CODE, row
        assert row.portable or row.hint, f"{row.api}: a manual row needs a hint"


@pytest.mark.parametrize("row", CALL_ROWS, ids=[r.api for r in CALL_ROWS])
def test_every_call_row_is_found_and_rewritten_to_its_replacement(row) -> None:  # type: ignore[no-untyped-def]
    source = f"import torch\nvalue = {row.api}()\n"
    found = scan_source(source).findings
    assert [(f.code, f.portable) for f in found] == [(row.code, True)]
    output = port_source(source).output
    assert f"value = {row.replacement}(" in output
    if row.guarded:
        assert f"value = {row.replacement}() if accel.is_accelerator_available() else {row.cpu_value}\n" in output


@pytest.mark.parametrize("row", CALL_ROWS, ids=[r.api for r in CALL_ROWS])
def test_a_call_row_used_as_a_value_is_renamed_only_where_its_meaning_on_cpu_is_the_same(row) -> None:  # type: ignore[no-untyped-def]
    source = f"import torch\nvalue = {row.api}\n"
    found = scan_source(source).findings
    same = row.on_cpu in (SAME, RAISES)
    assert [(f.code, f.portable) for f in found] == [(row.code, same)]
    if same:
        assert f"value = {row.replacement}\n" in port_source(source).output
    else:
        assert "where it is called" in (found[0].suggestion or "")


def test_manual_rows_are_reported_with_their_hint() -> None:
    source = "import torch\nprops = torch.cuda.get_device_properties(0)\nv = torch.version.cuda\n"
    found = scan_source(source).findings
    assert [(f.code, f.portable) for f in found] == [("ACC125", False), ("ACC206", False)]
    assert lookup("torch.cuda.get_device_properties").hint in found[0].suggestion  # type: ignore[union-attr,operator]


def test_redirect_hints_come_from_the_table() -> None:
    pytest.importorskip("torch", reason="the redirect patches torch")
    import accel_abstraction as accel
    from accel_abstraction.redirect.serve import Server
    from accel_abstraction.redirect.table import build_redirects

    with accel.using("cpu"):
        redirects = build_redirects(Server(accel.backend()))
    checked = 0
    for r in redirects:
        expected = hint_for(r.label)
        if expected and r.category != "unsupported":
            assert r.hint == expected, r.label
            checked += 1
    assert checked >= 30
    # the two tools used to disagree on seed_all: one answer now
    assert hint_for("torch.cuda.seed_all") == "accel.seed()"
    assert scan_source("import torch\ntorch.cuda.seed_all()\n").findings[0].portable
