"""benchmarks/realcode/differential.py tells a port that keeps a file's meaning on the cpu backend from one that does not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="runs the versions with the cpu backend")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from realcode.differential import compare  # noqa: E402

from accel_abstraction.porting import port_source  # noqa: E402

ORIGINAL = '''
import torch
import some_package_that_is_not_installed as missing
from .sibling import helper


def gpus():
    print("GPU available:", "Yes" if torch.cuda.is_available() else "No", missing.version)
    return torch.cuda.device_count()


def pick(device=None):
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def current():
    return torch.cuda.current_device()  # raises without CUDA: no CPU program relied on it


def needs_input(x):
    return x.cuda()
'''


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_the_port_keeps_what_the_file_does_on_cpu() -> None:
    result = compare("example", ORIGINAL, port_source(ORIGINAL).output)
    assert (result.changed, result.called, result.skipped) == (False, 3, 1), result.detail
    assert result.now_run == ("current",)


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_a_port_that_answers_differently_on_cpu_is_reported() -> None:
    # what accel port wrote before the cpu-meaning column: the accel call itself, unguarded
    careless = ORIGINAL.replace("torch.cuda.device_count()", "accel.device_count()")
    careless = careless.replace("torch.cuda.is_available()", "accel.is_available()").replace(
        "import torch\n", "import torch\nimport accel_abstraction as accel\n"
    )
    result = compare("example", ORIGINAL, careless)
    assert result.changed
    assert "gpus(): ['ok', 0] -> ['ok', 1]" in result.detail
    assert "printed differently" in result.detail


def test_each_change_is_counted_by_its_kind() -> None:
    from realcode.differential import MESSAGE_WRONG, RAISES_NOW, VALUE_CHANGED, change_kind

    assert change_kind(["returns", "int", 0], ["raises", "RuntimeError"]) == RAISES_NOW
    assert change_kind(["raises", "AssertionError"], ["raises", "RuntimeError"]) == MESSAGE_WRONG
    assert change_kind(["returns", "int", 0], ["returns", "int", 1]) == VALUE_CHANGED
