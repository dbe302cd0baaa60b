"""Every built-in rule's own examples (Fixit style): each must match and port as stated,
each counterexample must not match (:mod:`accel_abstraction.porting.rules.examples`)."""

from __future__ import annotations

import pytest

from accel_abstraction.porting.rules import BUILTIN_RULES, RULES_BY_CODE
from accel_abstraction.porting.rules.examples import check_counterexample, check_example

EXAMPLES = [(r.code, src, out) for r in BUILTIN_RULES for src, out in r.examples]
COUNTER = [(r.code, src) for r in BUILTIN_RULES for src in r.counterexamples]


def test_every_rule_has_an_example() -> None:
    assert {r.code for r in BUILTIN_RULES} == {code for code, _, _ in EXAMPLES}


@pytest.mark.parametrize(("code", "source", "ported"), EXAMPLES, ids=[f"{c}:{s[:30]}" for c, s, _ in EXAMPLES])
def test_example_matches_and_ports(code: str, source: str, ported: str | None) -> None:
    check_example(RULES_BY_CODE[code], source, ported)


@pytest.mark.parametrize(("code", "source"), COUNTER, ids=[f"{c}:{s[:30]}" for c, s in COUNTER])
def test_counterexample_does_not_match(code: str, source: str) -> None:
    check_counterexample(RULES_BY_CODE[code], source)
