"""The torch.cuda redirect table is typed rows (redirect/cuda_rows.py ROWS, derived from the porting table); docs/redirect.md's table is generated from them."""

from __future__ import annotations

import torch

from accel_abstraction.docgen import render
from accel_abstraction.redirect import docs, redirect_cuda
from accel_abstraction.redirect.cuda_module import ROWS


def test_committed_docs_match_the_rows() -> None:
    text = docs.DOC.read_text(encoding="utf-8")
    assert render(text, docs.SECTIONS) == text, "docs/redirect.md is stale: run python -m accel_abstraction.redirect.docs"


def test_docs_check_fails_on_a_stale_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    stale = tmp_path / "redirect.md"
    stale.write_text(docs.DOC.read_text(encoding="utf-8").replace("| `synchronize` | execution |", "| `synchronize` | memory |"))
    assert docs.main("redirect.docs", docs.DOC, docs.SECTIONS, ["--check", str(stale)]) == 1
    assert docs.main("redirect.docs", docs.DOC, docs.SECTIONS, [str(stale)]) == 0
    assert stale.read_text() == docs.DOC.read_text(encoding="utf-8")


def test_every_row_is_one_redirect_of_its_category() -> None:
    assert len({row.name for row in ROWS}) == len(ROWS)
    originals = {row.name: getattr(torch.cuda, row.name) for row in ROWS}
    with redirect_cuda() as r:
        assert [row.name for row in ROWS if getattr(torch.cuda, row.name) is originals[row.name]] == []
        torch.cuda.synchronize()
        torch.cuda.manual_seed(0)
    categories = {site.api: site.category for site in r.sites()}
    assert categories["torch.cuda.synchronize"] == "execution" and categories["torch.cuda.manual_seed"] == "rng"
