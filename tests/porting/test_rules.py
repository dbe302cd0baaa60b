"""Every built-in rule's own examples (Fixit style): each must match and port as stated,
each counterexample must not match."""

from __future__ import annotations

import pytest

from accel_abstraction.porting import port_source, scan_source
from accel_abstraction.porting.rules import BUILTIN_RULES

H = "import os\nimport torch\n"
EXAMPLES = [(r.code, src, out) for r in BUILTIN_RULES for src, out in r.examples]
COUNTER = [(r.code, src) for r in BUILTIN_RULES for src in r.counterexamples]


def test_every_rule_has_an_example() -> None:
    assert {r.code for r in BUILTIN_RULES} == {code for code, _, _ in EXAMPLES}


@pytest.mark.parametrize(("code", "source", "ported"), EXAMPLES, ids=[f"{c}:{s[:30]}" for c, s, _ in EXAMPLES])
def test_example_matches_and_ports(code: str, source: str, ported: str | None) -> None:
    text = H + source + "\n"
    findings = [f for f in scan_source(text).findings if f.code == code]
    assert findings, f"{code} did not match {source!r}"
    result = port_source(text)
    assert result.error is None
    if ported is None:
        assert not any(f.portable for f in findings)
        assert any(f.code == code for f in result.manual)
    else:
        assert any(f.portable for f in findings)
        last = result.output.rstrip("\n").splitlines()
        assert ported in last, f"{source!r} ported to {last[-3:]}"
        assert port_source(result.output).output == result.output, "a second port changed the output"


@pytest.mark.parametrize(("code", "source"), COUNTER, ids=[f"{c}:{s[:30]}" for c, s in COUNTER])
def test_counterexample_does_not_match(code: str, source: str) -> None:
    text = H + "import accel_abstraction as accel\n" + source + "\n"
    assert [f.code for f in scan_source(text).findings if f.code == code] == []
