"""AMP, RNG, distributed and cuDNN flags are served by the selected backend."""

from __future__ import annotations

import torch
import torch.distributed as dist

from accel_abstraction.redirect import redirect_cuda
from accel_abstraction.redirect.dist import translate_dist_backend


def test_amp_uses_the_backend_device_and_dtype() -> None:
    with redirect_cuda():
        with torch.cuda.amp.autocast():
            assert torch.is_autocast_enabled("cpu")
            assert torch.get_autocast_dtype("cpu") == torch.bfloat16  # cpu's AMP dtype, not CUDA's float16
        with torch.autocast("cuda", dtype=torch.float16):
            assert torch.get_autocast_dtype("cpu") == torch.float16  # an explicit dtype is kept
        scaler = torch.amp.GradScaler("cuda")
        legacy = torch.cuda.amp.GradScaler()
        forced = torch.amp.GradScaler("cuda", enabled=True)
    for s in (scaler, legacy, forced):
        assert isinstance(s, torch.amp.GradScaler) and s._device == "cpu"
    assert not scaler.is_enabled() and not legacy.is_enabled()  # bfloat16 needs no loss scaling
    assert forced.is_enabled()


def test_seeding_through_torch_cuda_seeds_the_backend() -> None:
    with redirect_cuda():
        torch.cuda.manual_seed_all(7)
        a = torch.randn(3, device="cuda")
        torch.cuda.manual_seed(7)
        b = torch.randn(3, device="cuda")
    assert torch.equal(a, b)


def test_nccl_becomes_the_backends_collective_library(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with redirect_cuda() as r:
        dist.init_process_group("nccl", init_method=f"file://{tmp_path}/store", world_size=1, rank=0)
        try:
            assert dist.get_backend() == "gloo"
            t = torch.ones(2, device="cuda")
            dist.all_reduce(t)
        finally:
            dist.destroy_process_group()
    assert any(s.api.startswith("torch.distributed.init_process_group") for s in r.sites())


def test_ddp_with_cuda_device_ids(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with redirect_cuda() as r:
        dist.init_process_group("nccl", init_method=f"file://{tmp_path}/store", world_size=1, rank=0)
        try:
            model = torch.nn.Linear(2, 1).cuda()
            ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0], output_device=0)
            ddp(torch.ones(3, 2, device="cuda")).sum().backward()
        finally:
            dist.destroy_process_group()
    assert model.weight.grad is not None
    assert any(s.api == "DistributedDataParallel(device_ids=...)" for s in r.sites())
    assert translate_dist_backend("cpu:gloo,cuda:nccl", "neuron", "neuron") == "cpu:gloo,neuron:neuron"
    assert translate_dist_backend("cpu:gloo,cuda:nccl", "cpu", "gloo") == "cpu:gloo"
    assert translate_dist_backend("gloo", "cpu", "gloo") == "gloo"


def test_cudnn_flags_drive_the_backend_knobs() -> None:
    assert not torch.are_deterministic_algorithms_enabled()
    try:
        with redirect_cuda() as r:
            torch.backends.cudnn.deterministic = True
            assert torch.backends.cudnn.deterministic is True
            assert torch.are_deterministic_algorithms_enabled()  # backend.set_deterministic(True)
    finally:
        torch.backends.cudnn.deterministic = False
        torch.use_deterministic_algorithms(False)
    assert [s.api for s in r.sites()] == ["torch.backends.cudnn.deterministic"]


def test_cuda_device_context_selects_a_backend_device() -> None:
    with redirect_cuda() as r:
        with torch.cuda.device(0):
            assert torch.cuda.current_device() == 0
        with torch.cuda.device(-1):  # torch's documented no-op stays a no-op
            pass
    assert sum(s.count for s in r.sites() if s.api == "torch.cuda.device") == 2
