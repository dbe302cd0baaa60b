"""The report names the user's line, even for calls torch makes on the user's behalf."""

from __future__ import annotations

import io
import json
import sys

import torch

from accel_abstraction.redirect import redirect_cuda


def _here() -> int:
    return sys._getframe(1).f_lineno


def test_sites_are_the_users_lines_with_counts() -> None:
    with redirect_cuda() as r:
        line_linear = _here() + 1
        layer = torch.nn.Linear(4, 4, device="cuda")  # torch creates the weights inside nn.Linear
        line_loop = _here() + 2
        for _ in range(3):
            torch.cuda.synchronize()
    assert layer.weight.device.type == "cpu"
    here = __file__
    got = {(s.line, s.api): s.count for s in r.sites() if s.file == here}
    assert got[(line_loop, "torch.cuda.synchronize")] == 3
    assert got[(line_linear, "torch.empty(device=cuda)")] == 2  # weight and bias, at the user's line
    assert all(s.file == here for s in r.sites()), "nothing is attributed to torch's own files"


def test_table_and_json_name_file_and_line() -> None:
    with redirect_cuda() as r:
        line = _here() + 1
        torch.ones(1).cuda()
    out = io.StringIO()
    r.print_report(out)
    assert f"test_report.py:{line}" in out.getvalue() and "Tensor.cuda()" in out.getvalue()
    data = json.loads(json.dumps(r.report()))
    [site] = data["sites"]
    assert (site["line"], site["api"], site["count"], site["status"]) == (line, "Tensor.cuda()", 1, "redirected")
    assert data["backend"] == "cpu" and data["calls"] == {"redirected": 1}


def test_every_port_to_hint_comes_from_the_porting_tables() -> None:
    from accel_abstraction.porting.mapping import hint_for
    from accel_abstraction.redirect import redirect_cuda
    from accel_abstraction.redirect.context import active_redirects
    from accel_abstraction.redirect.hints import port_hint

    with redirect_cuda() as r:
        installed = active_redirects()
        meta = dict(r.recorder.meta)
    assert installed
    for red in installed:
        assert red.hint == port_hint(red.label), red.label
        assert red.hint, f"{red.label}: no row in the mapping table and no scan rule"
    for api, (_, hint) in meta.items():
        assert hint == port_hint(api), api
    assert port_hint("torch.cuda.seed_all") == hint_for("torch.cuda.seed_all")  # the two tools agree


def test_pattern_labels_name_built_in_rules_that_word_their_hint() -> None:
    """RULE_OF holds rule objects: each is a built-in rule with a suggestion, and each label is one the redirect reports."""
    from accel_abstraction.porting.rules import BUILTIN_RULES
    from accel_abstraction.redirect.context import active_redirects
    from accel_abstraction.redirect.hints import DEVICE_ARGUMENT, RULE_OF, port_hint

    for label, rule in {**RULE_OF, "torch.zeros(device=cuda)": DEVICE_ARGUMENT}.items():
        assert any(rule is built_in for built_in in BUILTIN_RULES), f"{label}: {rule.code} is not a built-in rule"
        assert rule.suggestion and port_hint(label) == rule.suggestion, f"{label}: {rule.code} words no hint"
    with redirect_cuda() as r:
        reported = {red.label for red in active_redirects()} | set(r.recorder.meta)
    assert set(RULE_OF) - reported == set(), "RULE_OF names labels no redirect reports"
