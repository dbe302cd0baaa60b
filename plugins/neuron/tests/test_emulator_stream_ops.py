"""``record_stream`` on the emulated device (emulator/stream_ops.py): what DDP's input copy calls."""

from __future__ import annotations

import pytest
import torch
from torch.distributed.utils import _recursive_to


def test_record_stream_is_accepted_and_leaves_the_tensor_alone(neuron_emulator: torch.device) -> None:
    x = torch.arange(6.0, device="neuron:0")
    x.record_stream(torch.accelerator.current_stream(0))  # type: ignore[arg-type]
    assert torch.equal(x.cpu(), torch.arange(6.0))


def test_ddp_input_copy_between_devices_on_a_side_stream(neuron_emulator: torch.device) -> None:
    """DistributedDataParallel moves inputs from another neuron device with _recursive_to, which
    copies on a side stream and then calls record_stream (before: NotImplementedError)."""
    if torch.neuron.device_count() < 2:  # type: ignore[attr-defined]
        pytest.skip("needs two emulated devices")
    x = torch.arange(6.0).reshape(2, 3).to("neuron:0")
    ((moved,),) = _recursive_to((x,), torch.device("neuron:1"), True)
    assert moved.device == torch.device("neuron:1")
    assert torch.equal(moved.cpu(), x.cpu())


def test_the_device_modules_streams_are_torch_streams(neuron_emulator: torch.device) -> None:
    """FSDP records its unsharded parameters on ``torch.neuron.current_stream()``; Tensor.record_stream
    takes only a torch.Stream (before: "unknown parameter type")."""
    stream = torch.neuron.current_stream()  # type: ignore[attr-defined]
    side = torch.neuron.Stream()  # type: ignore[attr-defined]
    assert isinstance(stream, torch.Stream) and isinstance(side, torch.Stream)
    assert side.device == torch.device("neuron:0") and side.stream_id != stream.stream_id
    x = torch.ones(3, device="neuron:0")
    x.record_stream(stream)
    x.record_stream(side)
    assert torch.equal(x.cpu(), torch.ones(3))


FSDP_SCRIPT = """
import datetime, socket, warnings
import torch, torch.distributed as dist
import accel_abstraction as accel
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
accel.use("neuron")
warnings.simplefilter("ignore")
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
dist.init_process_group(accel.dist_backend(), init_method=f"tcp://127.0.0.1:{port}", world_size=1, rank=0,
                        timeout=datetime.timedelta(seconds=60))
try:
    model = FSDP(torch.nn.Linear(2, 1).to(accel.device()), device_id=accel.fsdp_device_id(0))
    model(torch.ones(3, 2, device=accel.device())).sum().backward()
    print("ran on", model.compute_device)
finally:
    dist.destroy_process_group()
"""


@pytest.mark.slow
def test_fsdp_trains_a_step_on_the_emulated_device(neuron_emulator: torch.device) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}
    done = subprocess.run([sys.executable, "-c", FSDP_SCRIPT], capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0 and done.stdout.strip() == "ran on neuron:0", done.stderr[-3000:]
