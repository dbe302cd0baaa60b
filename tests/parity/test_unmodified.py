"""Unmodified scripts: metrics read from the script's output (--metric REGEX), legs under --redirect."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from accel_abstraction.errors import ConfigError
from accel_abstraction.parity.pattern import MetricPattern, looks_like_pattern

from .conftest import CUDA_STYLE, PNG_MAGIC, parity

NANOGPT_LINE = r"iter (?P<step>\d+): loss (?P<loss>\S+), time (?P<step_time_ms>[\d.]+)ms"


def test_pattern_reads_steps_values_and_step_times_from_output() -> None:
    pattern = MetricPattern.parse(NANOGPT_LINE)
    assert pattern.compared == "loss" and pattern.metrics == ("loss", "step_time_ms")
    out = "training on cuda\niter 0: loss 3.6845, time 34.88ms\r\niter 1: loss nan, time 2.50ms\nnoise\n"
    records = pattern.records(out)
    assert records[0] == {"step": 0, "loss": 3.6845, "step_time_ms": 34.88, "step_time": 0.03488}
    assert records[1]["step"] == 1 and math.isnan(records[1]["loss"])
    assert pattern.records("iter 2: loss 1.5e+00x, time 1ms") == [
        {
            "step": 2,
            "error": "loss '1.5e+00x' is not a number in 'iter 2: loss 1.5e+00x, time 1ms'",
            "step_time_ms": 1.0,
            "step_time": 0.001,
        }  # fmt: skip
    ]


def test_metric_option_is_a_name_or_a_pattern() -> None:
    assert not looks_like_pattern("loss") and not looks_like_pattern("val_loss")
    assert looks_like_pattern(NANOGPT_LINE)
    with pytest.raises(ConfigError, match=r"found groups: loss"):
        MetricPattern.parse(r"loss (?P<loss>\S+)")


def test_the_test_script_is_really_unmodified() -> None:
    text = Path(CUDA_STYLE).read_text()
    assert "accel_abstraction" not in text and "import accel" not in text
    assert "torch.cuda" in text and ".cuda(" in text


@pytest.mark.slow
def test_unmodified_cuda_script_matches_on_cpu_and_emulated_neuron(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["--backends", "cpu,neuron", "--redirect", "--allow-missing", "--metric", NANOGPT_LINE]
    assert parity(CUDA_STYLE, *args, "--out", str(out)) == 0
    text = capsys.readouterr().out
    assert "(redirected)" in text and "match" in text
    report = json.loads((out / "parity.json").read_text())
    assert report["redirect"] is True and report["metric_pattern"] == NANOGPT_LINE
    cpu, neuron = report["runs"]
    assert neuron["env"]["ACCEL_NEURON_EMULATE"] == "1" and neuron["env"]["PYTHONUNBUFFERED"] == "1"
    assert (cpu["facts"]["backend"], neuron["facts"]["backend"]) == ("cpu", "neuron")
    assert len(cpu["loss"]) == 8 and cpu["median_step_time"] > 0
    assert report["comparisons"][1]["bitwise"] is True
    sites = json.loads(Path(neuron["redirect_report"]).read_text())["sites"]
    assert {"Tensor.cuda()", "torch.cuda.manual_seed"} <= {s["api"] for s in sites}
    assert (out / "parity.png").read_bytes()[:8] == PNG_MAGIC
