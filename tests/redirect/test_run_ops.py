"""``accel run --ops``: the ATen operators a run executed on the device, marked with what plugins document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import accel_abstraction.plugins as plugins
from accel_abstraction import hookimpl
from accel_abstraction.op_usage import OpSupport, OpUsage, annotate, backend_op_support
from accel_abstraction.redirect.runner import RunOptions, run

FALLBACK = OpSupport("aten::nonzero", "CPU_FALLBACK", "runs on the host", "Vendor docs, 'Operators'", "SDK 1.0")


class Documents:
    @hookimpl
    def accel_op_support(self, backend, register):  # type: ignore[no-untyped-def]
        if backend.name == "cpu":
            register(FALLBACK)


class Junk:
    @hookimpl
    def accel_op_support(self, backend, register):  # type: ignore[no-untyped-def]
        register(("aten::add", "N"))


def test_usage_counts_the_operators_run_on_that_device_type_only() -> None:
    with OpUsage("cpu") as usage:
        a = torch.ones(3)
        (a + 1).sum()
        torch.ones(2, device="meta") * 2  # another device: not counted
    assert usage.counts["aten::add"] == 1 and usage.counts["aten::sum"] == 1
    assert "aten::mul" not in usage.counts
    assert usage.counts["aten::ones"] == 1  # a factory counts by its device= argument
    before = dict(usage.counts)
    torch.ones(3) + 1  # after the block: nothing recorded
    assert dict(usage.counts) == before


def test_documented_operators_come_first_and_unknown_ones_have_no_status() -> None:
    used = annotate({"aten::add": 9, "aten::nonzero": 1, "aten::mul": 3}, {"aten::nonzero": FALLBACK})
    assert [(u.op, u.support) for u in used] == [("aten::nonzero", FALLBACK), ("aten::add", None), ("aten::mul", None)]


def test_a_plugin_registering_junk_contributes_nothing() -> None:
    import accel_abstraction.runtime as runtime

    plugins.reset()
    plugins.register_plugin(Junk(), "junk")
    plugins.register_plugin(Documents(), "documents")
    with pytest.warns(RuntimeWarning, match=r"'junk' .*accel_op_support registered an invalid item"):
        support = backend_op_support(runtime.current())
    assert support == {"aten::nonzero": FALLBACK}


def test_run_ops_reports_the_scripts_operators_with_the_documented_marks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugins.reset()
    plugins.register_plugin(Documents(), "documents")
    script = tmp_path / "script.py"
    script.write_text("import torch\nx = torch.tensor([0.0, 2.0])\nprint(torch.nonzero(x + 1).numel())\n")
    out = tmp_path / "r.json"
    assert run(RunOptions(str(script), report="table", output=str(out), ops=True)) == 0
    ops = {row["op"]: row for row in json.loads(out.read_text())["ops"]}
    assert ops["aten::nonzero"] == {
        "op": "aten::nonzero", "calls": 1, "status": "CPU_FALLBACK", "detail": "runs on the host",
        "source": "Vendor docs, 'Operators'", "release": "SDK 1.0",
    }  # fmt: skip
    assert ops["aten::add"] == {"op": "aten::add", "calls": 1, "status": None}
    err = capsys.readouterr().err
    assert "ATen operators run on 'cpu'" in err and "CPU_FALLBACK" in err and "1 documented by the vendor" in err


def test_without_ops_the_report_has_no_operators(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("import torch\ntorch.ones(1) + 1\n")
    out = tmp_path / "r.json"
    assert run(RunOptions(str(script), report="none", output=str(out))) == 0
    assert "ops" not in json.loads(out.read_text())
