"""scripts/transformers_method.py: one of transformers' mixin test methods, run verbatim on tiny models.

transformers' own text is not committed, so these run the harness with stand-in methods of the
same shape; docs/ci.md has the measured run of the recorded method.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import unittest
from pathlib import Path

import pytest

pytest.importorskip("transformers")

SCRIPT = Path(__file__).resolve().parent / "scripts" / "transformers_method.py"
spec = importlib.util.spec_from_file_location("transformers_method", SCRIPT)
assert spec is not None and spec.loader is not None
tm = importlib.util.module_from_spec(spec)
sys.modules["transformers_method"] = tm
spec.loader.exec_module(tm)

# Holds the embedding weight across .to(torch_device), as transformers' method does; skips when it got no gradient.
HOLDS_A_PARAMETER = """\
    def test_holds_a_parameter(self):
        config, inputs_dict = self.model_tester.prepare_config_and_inputs_for_common()
        for model_class in self.all_model_classes[:1]:  # the head model: it has a loss
            model = model_class(copy.deepcopy(config))
            weight = model.get_input_embeddings().weight
            inputs = self._prepare_for_class(inputs_dict, model_class, return_labels=True)
            model.to(torch_device)
            set_seed(42)
            model(**inputs).loss.backward()
            if weight.grad is None:
                self.skipTest(reason="no gradient reached the parameter held across .to()")
            self.assertGreater(weight.grad.abs().sum().item(), 0)
"""


def _record(
    tmp_path: Path, text: str, name: str = "test_holds_a_parameter"
) -> tuple[Path, dict[str, dict[str, str]]]:
    excerpt = tmp_path / f"{name}.py"
    excerpt.write_text(text, encoding="utf-8")
    data = excerpt.read_bytes()
    row = {"repo": "r/r", "commit": "0" * 40, "path": "tests/t.py", "chars": str(len(data)),
           "sha256": hashlib.sha256(data).hexdigest()}  # fmt: skip
    return excerpt, {name: row}


def test_the_committed_rows_parse() -> None:
    rows = tm.read_rows()
    assert "test_enable_input_require_grads_with_gradient_checkpointing" in rows
    assert all(len(r["commit"]) == 40 and len(r["sha256"]) == 64 for r in rows.values())


def test_an_edited_excerpt_is_refused(tmp_path: Path) -> None:
    excerpt, rows = _record(tmp_path, HOLDS_A_PARAMETER)
    assert tm.load_method(excerpt, rows)[0] == "test_holds_a_parameter"
    excerpt.write_text(HOLDS_A_PARAMETER.replace("42", "43"), encoding="utf-8")
    with pytest.raises(SystemExit, match="copy it again from the code index"):
        tm.load_method(excerpt, rows)
    with pytest.raises(SystemExit, match="no 'method' row"):
        tm.load_method(excerpt.rename(tmp_path / "other.py"), rows)


@pytest.mark.parametrize("family", ["gpt2", "t5"])
def test_the_harness_runs_a_method_on_the_cpu(tmp_path: Path, family: str) -> None:
    excerpt, rows = _record(tmp_path, HOLDS_A_PARAMETER)
    name, text = tm.load_method(excerpt, rows)
    method = tm.compile_method(text, name, "cpu")
    result = unittest.TestResult()
    tm.harness(method, family, "cpu")(name).run(result)
    assert (result.errors, result.failures, result.skipped) == ([], [], []), result


def test_the_harness_reports_a_skip(tmp_path: Path) -> None:
    text = HOLDS_A_PARAMETER.replace("if weight.grad is None:", "if True:")
    excerpt, rows = _record(tmp_path, text)
    result = unittest.TestResult()
    method = tm.compile_method(tm.load_method(excerpt, rows)[1], "test_holds_a_parameter", "cpu")
    tm.harness(method, "gpt2", "cpu")("test_holds_a_parameter").run(result)
    assert [reason for _, reason in result.skipped] == ["no gradient reached the parameter held across .to()"]
