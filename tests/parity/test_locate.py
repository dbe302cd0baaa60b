"""accel parity --locate: fingerprints of modules and ops, the first difference, end to end on a changed GELU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from accel_abstraction.parity.fingerprint import fingerprint
from accel_abstraction.parity.locate import entry_difference, first_difference

from .conftest import REPO, parity

DROPOUT = str(REPO / "examples" / "dropout_train.py")


def test_fingerprint_is_exact_and_reads_every_dtype() -> None:
    x = torch.linspace(-1, 1, 50)
    same, nudged = fingerprint(x.clone()), fingerprint(torch.nextafter(x, torch.tensor(2.0)))
    assert fingerprint(x) == same and fingerprint(x)["hash"] != nudged["hash"]
    assert fingerprint(x)["shape"] == [50] and fingerprint(x)["dtype"] == "float32"
    assert entry_difference(fingerprint(x), nudged).startswith("exact hash differs")
    assert entry_difference(fingerprint(x), nudged, rtol=1e-5) == ""  # within the tolerance: the same
    for t in (torch.tensor(3.0), x.bfloat16(), torch.ones(2, 2, dtype=torch.bool), torch.empty(0)):
        assert fingerprint(t)["hash"]
    assert fingerprint(torch.tensor([1.0, float("nan")]))["nonfinite"] == 1


def _entry(kind: str, module: str, value: float, **extra: object) -> dict[str, object]:
    return {"pos": 0, "kind": kind, "module": module, "call": 0, "out": 0, **extra, **fingerprint(torch.full((3,), value))}


def test_first_difference_names_the_module_and_the_op_inside_it() -> None:
    ref = [
        _entry("op", "M.fc", 1.0, seq=0, op="aten::addmm"),
        _entry("module", "M.fc", 1.0, type="Linear"),
        _entry("op", "M.act", 2.0, seq=0, op="aten::gelu"),
        _entry("module", "M.act", 2.0, type="GELU"),
        _entry("module", "M", 2.0, type="M"),
        _entry("grad", "M.fc", 5.0),
    ]
    other = [dict(e) for e in ref]
    other[2] = _entry("op", "M.act", 2.5, seq=0, op="aten::gelu")
    other[3] = _entry("module", "M.act", 2.5, type="GELU")
    other[4] = _entry("module", "M", 2.5, type="M")
    found = first_difference(ref, other, steps=[7])
    assert found is not None and (found.module, found.module_type, found.op, found.step) == ("M.act", "GELU", "aten::gelu", 7)
    assert "first differing op inside it: aten::gelu" in found.sentence()
    grads = [dict(e) for e in ref]
    grads[5] = _entry("grad", "M.fc", 6.0)
    found = first_difference(ref, grads, steps=[0])
    assert found is not None and found.kind == "grad" and found.module == "M.fc"
    assert first_difference(ref, [dict(e) for e in ref], steps=[0]) is None


@pytest.mark.slow
def test_locate_names_the_changed_gelu_live_and_from_a_recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_NEURON_EMULATE_RNG", "cpu")  # exact RNG: only the changed layer differs
    args = ["--no-plot", "--locate"]
    script = ["--", "--steps", "4", "--tanh-gelu-on", "neuron"]
    same = tmp_path / "same"  # unchanged, with dropout: bitwise cpu vs neuron under the exact RNG
    assert parity(DROPOUT, "--backends", "cpu,neuron", "--out", str(same), *args, "--", "--steps", "4") == 0
    assert json.loads((same / "parity.json").read_text())["comparisons"][1]["bitwise"] is True
    out = tmp_path / "live"
    assert parity(DROPOUT, "--backends", "cpu,neuron", "--out", str(out), *args, *script) == 1
    located = json.loads((out / "parity.json").read_text())["locate"]
    finding = located[0]["finding"]
    assert (finding["module"], finding["module_type"], finding["op"], finding["step"]) == (
        "Classifier.blocks.1.act", "GELU", "aten::gelu", 0,
    )  # fmt: skip
    ref = tmp_path / "cpu.json"
    assert parity(DROPOUT, "--backends", "cpu", "--record", str(ref), "--out", str(tmp_path / "rec"), *args, "--", "--steps", "4") == 0
    assert json.loads(ref.read_text())["runs"][0]["fingerprints"]  # the recording carries them
    out = tmp_path / "later"
    assert parity(DROPOUT, "--backends", "neuron", "--reference", str(ref), "--out", str(out), *args, *script) == 1
    finding = json.loads((out / "parity.json").read_text())["locate"][0]["finding"]
    assert (finding["module"], finding["op"]) == ("Classifier.blocks.1.act", "aten::gelu")
