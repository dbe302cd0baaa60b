"""Every built-in rule's own examples (Fixit style): each must match and port as stated,
each counterexample must not match (:mod:`accel_abstraction.porting.rules.examples`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from accel_abstraction import porting
from accel_abstraction.porting.rules import BUILTIN_RULES, RULES_BY_CODE, VISITS, Rule
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


def _reported_codes(path: Path) -> list[str]:
    """The codes ``path`` reports by name: ``report(node, "ACC101", ...)`` with a literal code."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "report":
            code = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "code"), None)
            if isinstance(code, ast.Constant) and isinstance(code.value, str):
                found.append(code.value)
    return found


def test_each_code_is_found_in_its_own_rule_file() -> None:
    # the shapes of a code are matched in rules/accNNN_*.py; the traversal (scanner.py), the value
    # positions (devices.py), the API table's checks (apichecks.py) and the rest report none by name
    package = Path(porting.__file__).parent
    elsewhere: dict[str, list[str]] = {}
    where: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for code in _reported_codes(path):
            where.setdefault(code, set()).add(path.name)
            own = path.parent.name == "rules" and path.name.startswith(code.lower())
            if not own:
                elsewhere.setdefault(str(path.relative_to(package)), []).append(code)
    assert elsewhere == {}
    table = {row.code for rule in BUILTIN_RULES for row in rule.apis}
    assert {r.code for r in BUILTIN_RULES} - set(where) - table == set()  # every code is reported somewhere


def test_the_traversal_dispatches_to_the_checks_the_rules_declare() -> None:
    declared = {key for rule in BUILTIN_RULES for key in rule.visits}
    assert {"method:cuda", "keyword:pin_memory", "keyword:fused", "string", "default", "dict:fused", "reference", "flag"} <= declared
    assert set(VISITS) == declared
    with pytest.raises(ValueError, match="unknown visits"):
        Rule("XYZ001", "manual", "m", visits={"nodes:Call": lambda *a: None})
