"""Emulated tensors through pickle, both torch.save formats and torch.multiprocessing queues (issue 27)."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

TIMEOUT_S = 300


def _roundtrip_save(tensor: torch.Tensor, zipfile: bool) -> torch.Tensor:
    buffer = io.BytesIO()
    torch.save(tensor, buffer, _use_new_zipfile_serialization=zipfile)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


@pytest.mark.parametrize("how", ["pickle", "save-zipfile", "save-legacy"])
def test_emulated_tensor_survives_serialization(neuron_emulator: torch.device, how: str) -> None:
    base = torch.arange(12.0).reshape(3, 4)
    tensor = base.to(neuron_emulator)[1:, ::2]  # a strided view with an offset
    if how == "pickle":
        back = pickle.loads(pickle.dumps(tensor))
    else:
        back = _roundtrip_save(tensor, zipfile=how == "save-zipfile")
    assert back.device == tensor.device
    assert torch.equal(back.cpu(), base[1:, ::2])


def test_emulated_parameter_pickles_with_requires_grad(neuron_emulator: torch.device) -> None:
    param = torch.nn.Parameter(torch.ones(3, device=neuron_emulator))
    back = pickle.loads(pickle.dumps(param))
    assert isinstance(back, torch.nn.Parameter) and back.requires_grad and back.device == param.device


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_emulated_tensor_travels_through_a_multiprocessing_queue(tmp_path: Path) -> None:
    script = tmp_path / "send_over_queue.py"
    script.write_text(
        "import torch, torch.multiprocessing as mp\n"
        "from accel_neuron import emulator\n"
        "def child(inbox, outbox):\n"
        "    t = inbox.get(timeout=120)\n"
        "    outbox.put((str(t.device), t.cpu().tolist(), t.requires_grad))\n"
        "    outbox.put((t * 2).detach())\n"
        "if __name__ == '__main__':\n"
        "    emulator.install()\n"
        "    ctx = mp.get_context('spawn')\n"
        "    inbox, outbox = ctx.Queue(), ctx.Queue()\n"
        "    p = ctx.Process(target=child, args=(inbox, outbox))\n"
        "    p.start()\n"
        "    inbox.put(torch.arange(3.0, device='neuron').requires_grad_())\n"
        "    print(outbox.get(timeout=120))\n"
        "    p.join(120)\n"  # the sender exits before its tensor is received
        "    back = outbox.get(timeout=120)\n"
        "    print(back.device, back.cpu().tolist())\n"
        "    print('exit', p.exitcode)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "('neuron:0', [0.0, 1.0, 2.0], True)",
        "neuron:0 [0.0, 2.0, 4.0]",
        "exit 0",
    ]


def test_non_leaf_emulated_tensor_is_refused_like_a_cpu_one(neuron_emulator: torch.device) -> None:
    from multiprocessing.reduction import ForkingPickler

    leaf = torch.ones(2, device=neuron_emulator, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(leaf * 2)
