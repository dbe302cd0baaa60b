"""docs/settings.md lists every ``ACCEL_*`` environment variable, and is current."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

from accel_abstraction import settings_docs
from accel_abstraction.docgen import render
from accel_abstraction.environment import process_variables

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\bACCEL_[A-Z0-9_]*[A-Z0-9]\b")
#: Names in string literals that are not variables of this project, each with why.
NOT_VARIABLES = {"ACCEL_MYDEV_SOMETHING": "a docstring's example of a third-party plugin's own variable"}


def _sources() -> list[Path]:
    trees = [ROOT / "accel_abstraction", *sorted((ROOT / "plugins").glob("*/accel_*"))]
    return [p for tree in trees for p in sorted(tree.rglob("*.py"))]


def _named_in_strings() -> dict[str, str]:
    """``ACCEL_*`` name -> first ``file:line`` of a string literal naming it."""
    found: dict[str, str] = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for name in NAME.findall(node.value):
                    found.setdefault(name, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_settings_reference_is_current() -> None:
    text = settings_docs.DOC.read_text(encoding="utf-8")
    assert render(text, settings_docs.SECTIONS) == text, "docs/settings.md is stale: run python -m accel_abstraction.settings_docs"


def test_every_variable_the_code_names_is_declared() -> None:
    declared = {v.variable for v in settings_docs.config_variables()} | {v.name for _, v in process_variables()}
    undeclared = {
        name: where for name, where in _named_in_strings().items() if name not in declared and name not in NOT_VARIABLES
    }
    assert not undeclared, (
        "ACCEL_* variables named in code but declared by no section and no row of "
        f"accel_abstraction/environment.py or of a plugin's accel_process_variables hook (add them there, then "
        f"regenerate docs/settings.md): {undeclared}"
    )


def test_a_process_variable_is_read_where_the_table_says() -> None:
    wrong = []
    for owner, var in process_variables():
        spec = importlib.util.find_spec(var.read_by)
        if spec is None or not spec.origin:
            wrong.append(f"{var.name} ({owner}): module {var.read_by} not found")
        elif var.name not in Path(spec.origin).read_text(encoding="utf-8"):
            wrong.append(f"{var.name} ({owner}): {var.read_by} does not name it")
    assert not wrong, wrong


def test_a_plugins_process_variable_is_listed_with_its_plugin() -> None:
    pytest.importorskip("accel_neuron")
    owners = {var.name: owner for owner, var in process_variables()}
    assert owners["ACCEL_NEURON_EMULATOR_HOT_PATH"] == "neuron" and owners["ACCEL_PLUGINS"] == "core"
    assert "| `ACCEL_NEURON_EMULATOR_HOT_PATH` | neuron |" in settings_docs.DOC.read_text(encoding="utf-8")


#: Modules that read a project variable with ``os.environ`` instead of the layer
#: (``accel_abstraction.environment.read``/``flag``, a section's ``SectionSpec``), each with why.
RAW_READS_ALLOWED = {
    "accel_abstraction/redirect/bootstrap/sitecustomize.py": "runs in every Python process under the redirect's "
    "PYTHONPATH, maybe one that cannot import accel_abstraction: it stays dependency-free (see its comment)",
    "plugins/neuron/accel_neuron/autoload.py": "runs inside every `import torch`; decides from ACCEL_BACKEND / "
    "ACCEL_NEURON_EMULATE before importing accel_abstraction at all (benchmarks/bench_autoload.py)",
}
#: Where the readers live: the one layer.
LAYER = {"accel_abstraction/environment.py", "accel_abstraction/sections.py", "accel_abstraction/settings.py"}
_READ_METHODS = {"get", "getenv", "pop", "setdefault"}


def _project_constants(trees: dict[Path, ast.Module]) -> set[str]:
    """Names bound (anywhere in the project) to an ``ACCEL_*`` string: ``ENV_VAR = "ACCEL_METRICS_FILE"``."""
    names = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                if isinstance(node.value.value, str) and NAME.fullmatch(node.value.value):
                    names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            if isinstance(node, ast.ImportFrom):  # from .seeding import ENV_VAR as SEED_ENV
                names |= {a.asname for a in node.names if a.asname}
    return names


def raw_reads(trees: dict[Path, ast.Module]) -> list[str]:
    """``file:line: code`` of every read of a project variable from an environment mapping
    (``os.environ.get("ACCEL_X")``, ``os.getenv(NAME)``, ``environ[NAME]``, ``NAME in os.environ``,
    ``env.get(NAME)``), where ``NAME`` is an ``ACCEL_*`` string or a constant bound to one."""
    constants = _project_constants(trees)

    def is_variable(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str) and bool(NAME.fullmatch(node.value))
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        return name in constants

    def is_environment(node: ast.AST) -> bool:
        text = ast.unparse(node)
        return "environ" in text or text in ("env", "os")

    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            hit = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _READ_METHODS
                and is_environment(node.func.value)
                and bool(node.args)
                and is_variable(node.args[0])
            )
            hit |= isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_environment(node.value) and is_variable(node.slice)
            hit |= (
                isinstance(node, ast.Compare)
                and isinstance(node.ops[0], (ast.In, ast.NotIn))
                and is_environment(node.comparators[0])
                and is_variable(node.left)
            )
            if hit:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")  # type: ignore[attr-defined]
    return found


def _trees() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in _sources()}


def test_project_variables_are_read_only_through_the_layer() -> None:
    reads = [r for r in raw_reads(_trees()) if r.split(":")[0] not in LAYER | RAW_READS_ALLOWED.keys()]
    assert not reads, (
        "ACCEL_* variables read with os.environ outside accel_abstraction.environment (use environment.read / "
        "environment.flag with a declared row; a setting: its section's load()): " + "; ".join(reads)
    )


def test_the_allowed_raw_reads_are_still_there() -> None:
    """An exception that no longer reads raw is taken off the list (the list stays the truth)."""
    readers = {r.split(":")[0] for r in raw_reads(_trees())}
    assert set(RAW_READS_ALLOWED) <= readers, set(RAW_READS_ALLOWED) - readers


@pytest.mark.parametrize(
    "code",
    [
        'import os\nv = os.environ.get("ACCEL_PLUGINS")',
        'import os\nv = os.getenv("ACCEL_X", "")',
        'import os\nNAME = "ACCEL_X"\nv = os.environ[NAME]',
        'import os\nv = "ACCEL_X" in os.environ',
        'def f(env):\n    return env.get(FILE_ENV)\nFILE_ENV = "ACCEL_PARITY_FINGERPRINTS"',
    ],
)
def test_the_raw_read_detector_finds(code: str) -> None:
    assert raw_reads({ROOT / "example.py": ast.parse(code)})
