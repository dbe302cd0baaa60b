"""The Trainium operator table (accel_neuron/trainium_ops.tsv), the run report's marks and strict mode."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from accel_neuron import trainium_ops

from accel_abstraction.errors import ConfigError

HEADER = "op\tstatus\tbasis\tdetail\tsource\trelease\n"


def test_every_row_is_a_documented_fact_with_its_source_and_release() -> None:
    rows = trainium_ops.load()
    assert rows, "the table has no row"
    for row in rows:
        assert row.status in trainium_ops.STATUSES
        assert "Supported PyTorch APIs and operators" in row.source and "Neuron 2.33" in row.release
    # what the AWS page names as N: quantized operator variants
    assert {"aten::quantize_per_tensor", "aten::dequantize"} <= {r.op for r in rows if r.status == "N"}


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        ("aten::nonzero\tMAYBE\trow\td\ts\tr", "status 'MAYBE' is not one of CPU_FALLBACK, N"),
        ("nonzero\tN\trow\td\ts\tr", "must be an ATen operator name"),
        ("aten::nonzero\tN\tguess\td\ts\tr", "basis 'guess'"),
        ("aten::nonzero\tN\trow\td\ts", "expected 6 non-empty tab-separated fields"),
    ],
)
def test_a_bad_row_is_refused_with_its_file_and_line(line: str, complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint) as info:
        trainium_ops.parse("# comment\n" + HEADER + line + "\n", "ops.tsv")
    assert str(info.value).startswith("ops.tsv:3:")


def test_an_operator_listed_twice_names_both_lines() -> None:
    row = "aten::nonzero\tCPU_FALLBACK\trow\td\ts\tr\n"
    with pytest.raises(ConfigError, match=r"ops.tsv:3: aten::nonzero is listed twice \(first at ops.tsv:2\)"):
        trainium_ops.parse(HEADER + row + row, "ops.tsv")


def test_a_class_fact_says_so_in_the_report_row() -> None:
    (row,) = trainium_ops.parse(HEADER + "aten::q_scale\tN\tclass\tquantized operator variant\tpage\trel\n", "t")
    assert row.support().detail == "quantized operator variant (documented for the class)"


def test_the_plugin_registers_the_table_for_neuron_only() -> None:
    from accel_neuron import plugin
    from accel_neuron.backend import NeuronBackend

    got: list = []
    neuron = NeuronBackend.__new__(NeuronBackend)
    plugin.accel_op_support(neuron, got.append)
    assert {s.op for s in got} == {r.op for r in trainium_ops.load()}
    got.clear()
    plugin.accel_op_support(object(), got.append)
    assert got == []


def test_accel_info_says_whether_strict_mode_is_on_and_where_it_was_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_neuron import plugin
    from accel_neuron.backend import NeuronBackend
    from accel_neuron.settings import NEURON

    count = len(trainium_ops.load())
    backend = NeuronBackend.__new__(NeuronBackend)
    for name in [k for k in os.environ if k.startswith("ACCEL_")]:
        monkeypatch.delenv(name)
    backend.neuron_settings = NEURON.load()
    assert plugin._fidelity(backend).startswith(f"strict off: the emulated device runs the {count} ATen operators")
    monkeypatch.setenv("ACCEL_NEURON_STRICT", "1")
    backend.neuron_settings = NEURON.load()
    assert plugin._fidelity(backend) == (
        f"strict (environment variable ACCEL_NEURON_STRICT): the emulated device refuses the {count} ATen "
        "operators TorchNeuron documents as N / CPU_FALLBACK (trainium_ops.tsv)"
    )


def test_every_listed_operator_exists_in_the_installed_torch() -> None:
    import torch

    missing = [r.op for r in trainium_ops.load() if not hasattr(torch.ops.aten, r.op.split("::", 1)[1])]
    assert missing == []  # a misspelt row would make strict mode refuse nothing for it


STRICT = """
import torch
from accel_neuron import emulator
emulator.install()
x = torch.ones(4, device="neuron")
try:
    torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)
    print("RAN")
except Exception as exc:
    print(type(exc).__name__, exc)
print("add", (x + 1).sum().item())
"""


def _python(code: str, **env: str) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    full.update(TORCH_DEVICE_BACKEND_AUTOLOAD="0", **env)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env=full)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_strict_mode_refuses_an_unsupported_operator_naming_it_and_the_source() -> None:
    out = _python(STRICT, ACCEL_NEURON_STRICT="1")
    assert "TrainiumStrictError aten::quantize_per_tensor on the neuron device: not supported on Trainium" in out
    assert "Supported PyTorch APIs and operators" in out and "Neuron 2.33.0" in out
    assert "ACCEL_NEURON_STRICT" in out  # where strict mode came from
    assert "trainium_ops.tsv:" in out  # the table row
    assert "add 8.0" in out  # what Trainium runs still runs
    relaxed = _python(STRICT)
    assert "TrainiumStrictError" not in relaxed and "add 8.0" in relaxed


FALLBACK_ROW = """
import torch
from accel_neuron import emulator, trainium_ops
from accel_neuron.emulator import strict
emulator.install()
rows = trainium_ops.parse(
    "op\\tstatus\\tbasis\\tdetail\\tsource\\trelease\\n"
    "aten::nonzero\\tCPU_FALLBACK\\trow\\truns on the host\\ta test page\\ttest 1.0\\n", "test.tsv")
strict.install(rows, "a test")
x = torch.tensor([0.0, 1.0, 2.0], device="neuron")
try:
    torch.nonzero(x)
    print("RAN")
except strict.TrainiumStrictError as exc:
    print("REFUSED", exc.op, "|", exc)
print("cpu", torch.nonzero(x.cpu()).flatten().tolist(), "mul", (x * 2).cpu().tolist())
"""


@pytest.mark.slow
def test_strict_mode_refuses_a_documented_cpu_fallback_too() -> None:
    out = _python(FALLBACK_ROW)
    assert "REFUSED aten::nonzero | aten::nonzero on the neuron device: runs on the host CPU on Trainium" in out
    assert "a test page, test 1.0; table row test.tsv:2" in out
    assert "cpu [1, 2] mul [0.0, 2.0, 4.0]" in out
