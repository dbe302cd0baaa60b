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
