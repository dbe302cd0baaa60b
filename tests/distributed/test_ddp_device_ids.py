"""``accel.ddp_device_ids`` / ``accel.ddp_output_device``: what DDP takes on each backend, the same
answer ``accel port``'s rewrite and ``accel run``'s redirect give."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import accel_abstraction as accel
from accel_abstraction.distributed.ddp import device_ids_for, output_device_for
from accel_abstraction.porting import port_source
from accel_abstraction.redirect import redirect_cuda


@pytest.fixture
def group(tmp_path: Path):  # type: ignore[no-untyped-def]
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", world_size=1, rank=0)
    yield
    dist.destroy_process_group()


def test_cpu_backend_answers_no_ids_whatever_the_rank() -> None:
    accel.use("cpu")
    assert accel.ddp_device_ids(0) is None and accel.ddp_device_ids(3) is None  # rank 3 of 4 CPU processes
    assert accel.ddp_output_device(0) is None and accel.ddp_output_device() is None


def test_an_indexed_backend_gets_the_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = accel.use("cpu")
    indexed = {0: torch.device("meta", 0), 1: torch.device("meta", 1)}
    monkeypatch.setattr(backend, "device", lambda i=None: indexed.get(i, torch.device("meta")))
    monkeypatch.setattr(backend, "current_device", lambda: 1)
    assert device_ids_for(backend, (0,)) == [0]
    assert device_ids_for(backend, ()) == [1]
    assert device_ids_for(backend, (torch.device("meta"),)) == [1]  # no index: the current device
    assert output_device_for(backend, 0) == 0 and output_device_for(backend) == 1


def test_ported_ddp_runs_on_the_cpu_backend_where_the_original_stops(group: None) -> None:
    accel.use("cpu")
    model = torch.nn.Linear(2, 1)
    with pytest.raises(ValueError, match="device_ids"):
        DDP(model, device_ids=[0], output_device=0)
    ddp = DDP(model, device_ids=accel.ddp_device_ids(0), output_device=accel.ddp_output_device(0))
    ddp(torch.ones(3, 2)).sum().backward()
    assert model.weight.grad is not None


def test_port_and_redirect_pass_ddp_the_same_arguments(group: None, monkeypatch: pytest.MonkeyPatch) -> None:
    source = "m = DDP(model, device_ids=[rank], output_device=rank)\n"
    ported = port_source(source, wrap=False).output  # one line, over 88: compared unwrapped
    assert "device_ids=accel.ddp_device_ids(rank), output_device=accel.ddp_output_device(rank)" in ported
    seen: list[tuple[object, object]] = []
    original = DDP.__init__

    def spy(self, module, device_ids=None, output_device=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((device_ids, output_device))
        original(self, module, device_ids, output_device, *args, **kwargs)

    monkeypatch.setattr(DDP, "__init__", spy)
    accel.use("cpu")
    exec(ported, {"accel": accel, "DDP": DDP, "model": torch.nn.Linear(2, 1), "rank": 0})
    with redirect_cuda():
        DDP(torch.nn.Linear(2, 1), device_ids=[0], output_device=0)  # the redirect wraps the spy
    assert seen == [(None, None), (None, None)]
