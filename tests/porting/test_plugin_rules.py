"""Rules a plugin constructs: names, matchers, prechecks, and the checks on them."""

from __future__ import annotations

import ast

import pytest

from accel_abstraction.porting import BUILTIN_RULES, Rule, port_source, scan_source
from accel_abstraction.porting.rules import MatchContext


def _launch(node: ast.AST, ctx: MatchContext) -> str | None:
    if isinstance(node, ast.Call) and ctx.qualname(node.func) == "mylib.launch_kernel":
        return "hand-written kernel"
    return None


LAUNCH = Rule("MYL002", "manual", "mylib kernel launch", matcher=_launch, precheck=("launch_kernel",))
NAMES = Rule("MYL001", "manual", "uses mylib.cuda", names=("mylib.cuda",), precheck=("mylib",))
SOURCE = (
    "import mylib as ml\nfrom mylib import cuda as mc\n\n"
    "def f(x):\n    y = x + 1\n    ml.launch_kernel(y)\n    return mc.stream(y)\n"
)


def test_matcher_and_names_rules_report_through_aliases() -> None:
    findings = scan_source(SOURCE, rules=(*BUILTIN_RULES, LAUNCH, NAMES)).findings
    assert [(f.line, f.col, f.code, f.message) for f in findings] == [
        (6, 5, "MYL002", "mylib kernel launch: hand-written kernel"),
        (7, 12, "MYL001", "uses mylib.cuda: mylib.cuda.stream"),
    ]
    assert all(not f.portable for f in findings)


def test_without_precheck_every_file_is_parsed_and_walked() -> None:
    rule = Rule("MYL003", "manual", "launch", matcher=_launch)
    source = "import mylib\nmylib.launch_kernel()\n"
    assert scan_source(source, rules=(*BUILTIN_RULES, LAUNCH)).findings  # precheck word present
    assert scan_source(source.replace("launch_kernel", "run"), rules=(*BUILTIN_RULES, LAUNCH)).skipped
    assert [f.code for f in scan_source(source, rules=(*BUILTIN_RULES, rule)).findings] == ["MYL003"]


def test_plugin_findings_are_listed_as_not_ported() -> None:
    result = port_source(SOURCE)  # plugin rules are not loaded by port_source itself
    assert result.output == SOURCE


@pytest.mark.parametrize("code", ["acc101", "ACC1", "A101", "ACCESS1234"])
def test_rule_codes_are_checked(code: str) -> None:
    with pytest.raises(ValueError, match="capital letters then 3 digits"):
        Rule(code, "manual", "x", names=("x",))
