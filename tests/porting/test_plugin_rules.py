"""Rules a plugin constructs: names, matchers, prechecks, and the checks on them."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from accel_abstraction.porting import BUILTIN_RULES, Rule, port_source, scan_source
from accel_abstraction.porting.apis import manual
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


# A new porting rule is one file: the rule object (its matcher, its typed fix, its examples)
# and the hook that offers it, as a third-party package would ship it.
RULE_FILE = '''
"""mylib.gpu_sync() waits for the GPU: on any backend that is accel.synchronize()."""

import ast

from accel_abstraction import hookimpl
from accel_abstraction.porting.fixes import Replace
from accel_abstraction.porting.rules import Match, Rule


def _gpu_sync(node, ctx):
    if isinstance(node, ast.Call) and not node.args and ctx.qualname(node.func) == "mylib.gpu_sync":
        return Match(fix=Replace(text="accel.synchronize()"))
    return None


RULE = Rule(
    "MYL101",
    "sync-streams",
    "mylib.gpu_sync() waits for a CUDA device",
    "accel.synchronize()",
    portable=True,
    matcher=_gpu_sync,
    precheck=("gpu_sync",),
    examples=(("import mylib as ml\\nml.gpu_sync()", "accel.synchronize()"),),
    counterexamples=("import mylib\\nmylib.cpu_sync()", "gpu_sync()"),
)


@hookimpl
def accel_scan_rules(register):
    register(RULE)
'''


def test_a_rule_in_one_file_of_a_plugin_is_scanned_and_ported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plugins = pytest.importorskip("accel_abstraction.plugins")
    pytest.importorskip("libcst", reason="accel port rewrites with libcst")
    from accel_abstraction.porting.__main__ import main
    from accel_abstraction.porting.rules.examples import check_rule
    from accel_abstraction.porting.runner import load_rules

    (tmp_path / "accel_mylib_rule.py").write_text(RULE_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("accel_mylib_rule")
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("import mylib\n\nmylib.gpu_sync()\nmylib.cpu_sync()\n")
    monkeypatch.chdir(project)
    plugins.reset()
    plugins.register_plugin(module, "mylib-rules")
    try:
        rules = load_rules()
        assert [r.code for r in rules][-1] == "MYL101" and rules[: len(BUILTIN_RULES)] == BUILTIN_RULES
        check_rule(module.RULE, rules)  # its own examples, as the built-in rules' run
        assert main(["scan", "train.py"]) == 1
        assert capsys.readouterr().out == "train.py:3:1 MYL101 mylib.gpu_sync() waits for a CUDA device (accel.synchronize())\n"
        assert main(["port", "--write", "train.py"]) == 0
    finally:
        plugins.reset()
    assert (project / "train.py").read_text() == (
        "import accel_abstraction as accel\nimport mylib\n\naccel.synchronize()\nmylib.cpu_sync()\n"
    )


def test_a_plugin_rule_cannot_bring_api_rows() -> None:
    rule = Rule("MYL102", "manual", "rows", names=("mylib",), apis=(manual("mylib.x", "no"),))
    plugins = pytest.importorskip("accel_abstraction.plugins")
    from accel_abstraction.hookspecs import hookimpl
    from accel_abstraction.porting.runner import load_rules

    class Rows:
        @hookimpl
        def accel_scan_rules(self, register):  # type: ignore[no-untyped-def]
            register(rule)

    plugins.reset()
    plugins.register_plugin(Rows(), "rows")
    try:
        with pytest.warns(RuntimeWarning, match="which the scanner reads from the built-in rules only"):
            assert load_rules() == BUILTIN_RULES
    finally:
        plugins.reset()
