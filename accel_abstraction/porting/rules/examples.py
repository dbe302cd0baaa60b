"""A rule's examples and counterexamples, run as tests (Fixit style), for built-in and plugin rules alike.

``tests/porting/test_rules.py`` runs every built-in rule's; a plugin runs its own the same
way::

    from accel_abstraction.porting.rules import BUILTIN_RULES
    from accel_abstraction.porting.rules.examples import check_rule

    def test_my_rule():
        check_rule(RULE, rules=(*BUILTIN_RULES, RULE))

Each example's source is preceded by ``import os`` and ``import torch``; ``ported`` must be
one of the lines ``accel port`` makes of it (``None``: reported, listed as not ported), and
a second port must change nothing.  A counterexample must not be reported.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Rule

#: What every example's source is preceded by.
PRELUDE = "import os\nimport torch\n"


def check_example(rule: Rule, source: str, ported: str | None, rules: Sequence[Rule] | None = None) -> None:
    """Raise ``AssertionError`` unless ``rule`` reports ``source`` and ``accel port`` makes ``ported`` of it.

    ``rules``: the rule set scanned with (default: the built-in rules); it must hold ``rule``.
    """
    from ..codemod import port_source  # needs libcst: the `port` extra
    from ..scanner import scan_source

    text = PRELUDE + source + "\n"
    findings = [f for f in scan_source(text, rules=rules).findings if f.code == rule.code]
    assert findings, f"{rule.code} did not match {source!r}"
    result = port_source(text, rules=rules, wrap=False)  # the example's line compared whole
    assert result.error is None, f"{rule.code}: porting {source!r} failed: {result.error}"
    if ported is None:
        assert not any(f.portable for f in findings), f"{rule.code}: {source!r} should be reported, not rewritten"
        assert any(f.code == rule.code for f in result.manual), f"{rule.code}: {source!r} is not listed as not ported"
        return
    assert any(f.portable for f in findings), f"{rule.code}: {source!r} is reported without a fix"
    last = result.output.rstrip("\n").splitlines()
    assert ported in last, f"{rule.code}: {source!r} ported to {last[-3:]}, not {ported!r}"
    assert port_source(result.output, rules=rules, wrap=False).output == result.output, f"{rule.code}: a second port changed {source!r}"


def check_counterexample(rule: Rule, source: str, rules: Sequence[Rule] | None = None) -> None:
    """Raise ``AssertionError`` if ``rule`` reports ``source`` (``accel_abstraction`` imported as ``accel``)."""
    from ..scanner import scan_source

    text = PRELUDE + "import accel_abstraction as accel\n" + source + "\n"
    found = [f for f in scan_source(text, rules=rules).findings if f.code == rule.code]
    assert not found, f"{rule.code} matched its counterexample {source!r}: {found[0].message}"


def check_rule(rule: Rule, rules: Sequence[Rule] | None = None) -> None:
    """Every example and counterexample of ``rule``; a rule without examples fails."""
    assert rule.examples, f"{rule.code} has no examples"
    for source, ported in rule.examples:
        check_example(rule, source, ported, rules)
    for source in rule.counterexamples:
        check_counterexample(rule, source, rules)
