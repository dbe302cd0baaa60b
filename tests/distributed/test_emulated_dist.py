"""The emulated collective library, in this process: registration, and staging on a one-rank group.

The two-rank runs on emulated ``neuron`` tensors are in ``test_launch.py``; here the same
process group class is registered under a test name for CPU tensors, which exercises the
staging (non-contiguous inputs are copied, results copied back) without a second process.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from accel_abstraction.testing.ports import free_port

emulated_dist = pytest.importorskip("accel_neuron.emulated_dist", reason="the neuron plugin is not installed")

NAME = "accel_emutest"


@pytest.fixture
def one_rank_group() -> object:
    emulated_dist.register_emulated_process_group(NAME, devices=["cpu"])
    dist.init_process_group(NAME, init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    yield dist.group.WORLD
    dist.destroy_process_group()


def test_registration_is_idempotent_and_leaves_existing_backends_alone() -> None:
    emulated_dist.register_emulated_process_group(NAME, devices=["cpu"])
    assert emulated_dist.register_emulated_process_group(NAME, devices=["cpu"]) is False
    assert emulated_dist.register_emulated_process_group("gloo", devices=["cpu"]) is False
    assert dist.Backend.default_device_backend_map["cpu"] == "gloo"


def test_collectives_copy_results_back(one_rank_group: object) -> None:
    assert isinstance(one_rank_group, emulated_dist.EmulatedProcessGroup)
    assert dist.get_backend() == NAME
    strided = torch.arange(6.0).reshape(2, 3).t()
    dist.all_reduce(strided)
    assert torch.equal(strided, torch.arange(6.0).reshape(2, 3).t())
    out = torch.zeros(3).reshape(3, 1).t()  # non-contiguous output: written back through the copy
    dist.all_gather_single(out, torch.tensor([[1.0, 2.0, 3.0]]).t().t())
    assert out.tolist() == [[1.0, 2.0, 3.0]]
    piece = torch.zeros(2)
    dist.reduce_scatter_single(piece, torch.tensor([4.0, 5.0]))
    assert piece.tolist() == [4.0, 5.0]
    work = dist.all_reduce(torch.ones(1), async_op=True)
    assert work.wait() and work.is_completed()
    dist.barrier()


def test_ddp_step_on_the_emulated_group(one_rank_group: object) -> None:
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
    reference = torch.nn.Linear(3, 2)
    reference.load_state_dict(model.module.state_dict())
    x = torch.randn(4, 3)
    model(x).square().sum().backward()
    reference(x).square().sum().backward()
    assert torch.equal(model.module.weight.grad, reference.weight.grad)


def test_the_group_keeps_its_name_for_device_meshes(one_rank_group: object) -> None:
    # DeviceMesh and the functional collectives look groups up by name; a Python group has no C++ backend to hold it.
    assert one_rank_group.group_name == "0"
    sub = dist.new_group([0], backend=NAME)
    assert sub.group_name and sub.group_name != one_rank_group.group_name


def test_premul_sum_scales_a_copy_of_the_input(one_rank_group: object) -> None:
    # gloo has no PREMUL_SUM (FSDP2 uses it for a custom gradient divide factor); the group scales, then sums.
    inp = torch.tensor([2.0, 4.0])
    out = torch.zeros(2)
    dist.reduce_scatter_single(out, inp, op=dist._make_nccl_premul_sum(0.5))
    assert out.tolist() == [1.0, 2.0] and inp.tolist() == [2.0, 4.0]
    t = torch.tensor([3.0])
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(torch.tensor([2.0])))
    assert t.tolist() == [6.0]


def test_coalescing_blocks_and_device_barriers(one_rank_group: object) -> None:
    a, b = torch.ones(2), torch.ones(3)
    with dist._coalescing_manager(device=torch.device("cpu"), async_ops=True) as cm:
        dist.all_reduce(a)
        dist.all_reduce(b, op=dist.ReduceOp.MAX)
    cm.wait()
    assert a.tolist() == [1.0, 1.0] and b.tolist() == [1.0] * 3
    dist.barrier(device_ids=[0])


def test_a_collective_gloo_cannot_run_raises_an_accel_error_naming_it(one_rank_group: object) -> None:
    from accel_abstraction.errors import AccelError

    with pytest.raises(emulated_dist.UnsupportedCollectiveError, match="all_reduce") as info:
        dist.all_reduce(torch.ones(1), op=dist.ReduceOp.BAND)  # gloo: bitwise ops on integers only
    assert isinstance(info.value, AccelError) and info.value.collective == "all_reduce"
    assert "BAND" in str(info.value)
    with pytest.raises(emulated_dist.UnsupportedCollectiveError, match="reduce_scatter_tensor"):
        dist.reduce_scatter_single(torch.ones(1, dtype=torch.uint16), torch.ones(1, dtype=torch.uint16))
