"""A script failing inside torch is reported at the script's call site, with the dispatcher's message cut short."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel_abstraction.redirect.runner import RunOptions, run

FAILING = '''import torch


def forward(x):
    return torch.nn.functional.linear(x, torch.ones(3, 5))


def helper(x):
    raise NotImplementedError(
        "Could not run 'aten::_fake_op' with arguments from the 'PrivateUse1' backend.\\n" + "\\n".join(f"Key{i}: registered" for i in range(40))
    )


if __name__ == "__main__":
    import sys
    if sys.argv[1] == "aten":
        forward(torch.ones(2, 4, device="cuda"))
    layer = torch.nn.Linear(2, 2)
    layer.register_forward_hook(lambda *a: helper(None))
    layer(torch.ones(1, 2))
'''


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(FAILING)
    return path


def test_failure_inside_aten_names_the_scripts_line(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(RunOptions(str(script), ["aten"], report="none")) == 1
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("accel run: RuntimeError at ") and f"{script}:5 in forward" in last
    assert "torch.nn.functional.linear" in last and "on backend 'cpu'" in last and "cannot be multiplied" in last
    assert "runpy" not in err  # the traceback starts at the script


def test_a_long_dispatcher_message_is_cut_and_its_operator_named(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(RunOptions(str(script), ["hook"], report="none")) == 1
    err = capsys.readouterr().err
    assert "Key39" not in err and "[40 more lines of the message" in err
    last = err.strip().splitlines()[-1]
    assert f"{script}:9 in helper" in last and "aten::_fake_op" in last
    assert run(RunOptions(str(script), ["hook"], report="none", traceback=True)) == 1
    assert "Key39" in capsys.readouterr().err  # in full when asked
