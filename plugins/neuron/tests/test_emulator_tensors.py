"""Neuron tensors: creation, movement, printing, views and in-place semantics."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import make_tensor

pytestmark = pytest.mark.usefixtures("neuron_emulator")

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.uint8,
    torch.bool,
    torch.complex64,
]


def test_device_strings_and_factories():
    assert torch.device("neuron:0").type == "neuron"
    for t in (
        torch.zeros(2, 3, device="neuron"),
        torch.ones(4, device="neuron:0"),
        torch.arange(5, device=torch.device("neuron")),
        torch.full((2,), 7.0, device="neuron"),
        torch.empty(3, device="neuron"),
        torch.randn(3, device="neuron"),
        torch.eye(2, device="neuron"),
        torch.tensor([1, 2], device="neuron"),
    ):
        assert t.device == torch.device("neuron", 0) and t.is_neuron
    assert torch.full((2,), 7.0, device="neuron").cpu().tolist() == [7.0, 7.0]
    assert torch.arange(5, device="neuron").cpu().tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_is_exact(dtype):
    src = (torch.randn(5, 3) * 100).to(dtype)
    dev = src.to("neuron")
    assert dev.device.type == "neuron" and dev.dtype == dtype
    back = dev.cpu()
    assert back.device.type == "cpu" and torch.equal(back, src)
    assert torch.equal(dev.to("cpu"), src) and torch.equal(dev.neuron().cpu(), src)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=32), min_size=1, max_size=40))
def test_round_trip_arbitrary_values(values):
    src = torch.tensor(values, dtype=torch.float32)
    assert torch.equal(src.to("neuron").cpu(), src)


def test_module_to_neuron_and_back():
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    ref = {k: v.clone() for k, v in m.state_dict().items()}
    m.to("neuron")
    assert all(p.device.type == "neuron" for p in m.parameters())
    assert all(b.device.type == "neuron" for b in m.buffers())
    assert isinstance(m[0].weight, torch.nn.Parameter)
    m.cpu()
    assert all(torch.equal(v, ref[k]) for k, v in m.state_dict().items())


def test_print_shows_values_and_device():
    text = repr(torch.tensor([1.5, -2.0]).to("neuron"))
    assert "1.5000" in text and "-2.0000" in text and "device='neuron:0'" in text
    assert str(torch.tensor(3).to("neuron").item()) == "3"


def test_views_share_memory_and_inplace_ops_mutate():
    x = torch.zeros(4, 4, device="neuron")
    row = x[1]
    row.fill_(3.0)
    x.t()[0, 2] = 5.0  # writes through a view of a view
    assert x.cpu()[1].tolist() == [3.0, 3.0, 3.0, 3.0]
    assert x.cpu()[2, 0].item() == 5.0
    assert row.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    y = x.add_(1)
    assert y is x and x.cpu()[0, 0].item() == 1.0


def test_inplace_view_ops_resize_and_out_arguments():
    x = torch.arange(6.0, device="neuron").reshape(2, 3)
    x.t_()
    assert x.shape == (3, 2) and torch.equal(x.cpu(), torch.arange(6.0).reshape(2, 3).t())
    y = torch.ones(3, device="neuron")
    y.resize_(8)
    assert y.shape == (8,) and y[:3].cpu().tolist() == [1.0, 1.0, 1.0]
    out = torch.empty(0, device="neuron")
    torch.add(torch.ones(3, device="neuron"), 1, out=out)
    assert out.shape == (3,) and out.cpu().tolist() == [2.0, 2.0, 2.0]
    q, r = torch.empty(0, device="neuron"), torch.empty(0, device="neuron", dtype=torch.long)
    torch.max(torch.tensor([[1.0, 5.0], [7.0, 2.0]], device="neuron"), 1, out=(q, r))
    assert q.cpu().tolist() == [5.0, 7.0] and r.cpu().tolist() == [1, 0]


@pytest.mark.parametrize(
    "restride",
    [
        lambda x: x.t_(),
        lambda x: x.transpose_(0, 1),
        lambda x: x.unsqueeze_(1),
        lambda x: x.unsqueeze_(-1).squeeze_(),
        lambda x: x[:, :1].squeeze_(1),
        lambda x: x.unsqueeze_(0).squeeze_((0, 2)),
        lambda x: x.detach_(),
    ],
    ids=["t_", "transpose_", "unsqueeze_", "squeeze_", "squeeze_.dim", "squeeze_.dims", "detach_"],
)
def test_inplace_views_restride_in_place_as_on_the_cpu(restride):
    # In-place views keep their composite kernel on neuron (routing.keeps_decomposition): it restrides
    # `self` through as_strided_ (a device-agnostic view) instead of taking the Python kernel's CPU view
    # and copying the geometry back, 30 us a call; result, storage and version are the CPU's.
    for name in ("aten::t_", "aten::transpose_", "aten::unsqueeze_", "aten::squeeze_.dim", "aten::detach_"):
        assert not torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1"), name
    cpu = torch.arange(6.0).reshape(2, 3).clone()  # not a view: detach_ refuses views
    x = cpu.to("neuron")
    ptr, version = x.data_ptr(), x._version
    out, expected = restride(x), restride(cpu)
    assert (out.shape, out.stride(), out.storage_offset()) == (
        expected.shape,
        expected.stride(),
        expected.storage_offset(),
    )
    assert torch.equal(out.cpu(), expected) and out.data_ptr() == ptr + 4 * expected.storage_offset()
    assert x._version == version + cpu._version
    with pytest.raises(
        IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"
    ):
        torch.ones(2, 3, device="neuron").transpose_(0, 5)


@pytest.mark.parametrize(
    ("shape", "offset", "new_size", "memory_format"),
    [((6,), 2, (3, 5), None), ((2, 3, 2, 2), 0, (2, 3, 4, 4), torch.channels_last), ((4,), 0, (2, 2), None)],
)
def test_resize_grows_or_keeps_the_storage_as_the_cpu_does(shape, offset, new_size, memory_format):
    # resize_ grows the storage without first letting the CPU kernel fail on the non-resizable alias
    # (kernels._must_grow): sizes, strides, storage size and the old bytes are the CPU's either way.
    got = {}
    for device in ("cpu", "neuron"):
        base = torch.arange(float(offset + torch.Size(shape).numel()), device=device)
        t = base[offset:].view(shape)
        t.resize_(new_size, memory_format=memory_format)
        got[device] = (
            t.shape,
            t.stride(),
            t.storage_offset(),
            t.untyped_storage().nbytes(),
            base.cpu().tolist(),
        )
    assert got["neuron"] == got["cpu"]


def test_scalars_and_lists_come_back_as_python_values():
    x = torch.tensor([1.0, 2.0, 3.0], device="neuron")
    assert x.sum().item() == 6.0
    assert x.tolist() == [1.0, 2.0, 3.0]
    assert [t.device.type for t in x.split(1)] == ["neuron"] * 3
    assert bool((x > 0).all())


def test_lazy_conjugate_and_negative_views_keep_their_meaning():
    x = torch.randn(4, dtype=torch.complex64)
    xn = x.to("neuron")
    assert xn.conj().is_conj()
    assert torch.equal(xn.conj().cpu(), x.conj())
    assert torch.equal((xn.conj() * 2).cpu(), x.conj() * 2)
    assert torch.equal(xn.conj().resolve_conj().cpu(), x.conj().resolve_conj())
    y = torch.randn(3)
    assert torch.equal(y.to("neuron")._neg_view().cpu(), y._neg_view())


@pytest.mark.parametrize("new_size", [4, 16])
def test_resize_leaves_other_tensors_on_the_storage_alone(new_size):
    # On the Python path a CPU view is cached per storage and geometry and lent to every op on a
    # tensor of that geometry: resize_ once resized the cached view itself, so a second tensor over
    # the same storage (same shape) then summed 4 (or read 16) elements instead of its 8.
    x = torch.arange(8.0, device="neuron")
    assert x.sum().item() == 28.0  # its CPU view is now cached
    y = x.view(8)
    y.resize_(new_size)
    assert y.shape == (new_size,)
    assert x.shape == (8,) and x.sum().item() == 28.0
    assert torch.equal(x.cpu(), torch.arange(8.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.int32, torch.uint8, torch.bool])
@pytest.mark.parametrize(
    ("size", "stride", "new_size"), [((10,), (1,), (20,)), ((2, 3, 4), (1, 4, 12), (3, 4, 5))]
)
def test_resize_fills_new_memory_as_the_cpu_does_under_deterministic_fill(dtype, size, stride, new_size):
    # With deterministic algorithms and torch.utils.deterministic.fill_uninitialized_memory on, the
    # CPU's resize_ fills the bytes a storage grows by with NaN (integers: their maximum; bool: True).
    # The emulator grew the storage itself and left them uninitialized (PyTorch's test_torch
    # test_deterministic_resize failed on neuron for every dtype).
    from torch.testing._internal.common_utils import DeterministicGuard

    grown, old = {}, {}
    for device in ("cpu", "neuron"):
        a = torch.empty_strided(size, stride, dtype=dtype, device=device).fill_(0)
        old[device] = a.untyped_storage().nbytes() // a.element_size()
        with DeterministicGuard(True, fill_uninitialized_memory=True):
            a.resize_(new_size)
        grown[device] = torch.empty(0, dtype=dtype, device=device).set_(a.untyped_storage()).cpu()
    assert old["neuron"] == old["cpu"] and grown["neuron"].numel() == grown["cpu"].numel() > old["cpu"]
    new_part = grown["neuron"][old["cpu"] :]
    torch.testing.assert_close(new_part, grown["cpu"][old["cpu"] :], rtol=0, atol=0, equal_nan=True)
    if dtype.is_floating_point or dtype.is_complex:
        assert new_part.isnan().all()
    else:
        assert new_part.eq(True if dtype == torch.bool else torch.iinfo(dtype).max).all()


def test_a_lazy_clone_is_a_copy_the_original_does_not_share():
    # Tensor._lazy_clone is a copy-on-write clone on the CPU. Run on a CPU view, its new storage's
    # memory was the neuron storage's own and was mapped back onto the original neuron storage: on
    # the compiled path a write to the clone changed the original (and the reverse). Now the clone
    # is c10 copy-on-write on the compiled path (a copy at once on the Python one), and taking a
    # storage's data_ptr() gives it memory of its own, as on the CPU (test_emulator_cow.py).
    for first, second in ((0, 1), (1, 0)):
        base = torch.arange(12.0).reshape(3, 4).t()[1:]  # not contiguous, storage offset 1
        t = torch.arange(12.0, device="neuron").reshape(3, 4).t()[1:]
        pair = [t, t._lazy_clone()]
        assert pair[1].stride() == t.stride() and pair[1].storage_offset() == t.storage_offset()
        assert pair[1].untyped_storage().nbytes() == t.untyped_storage().nbytes()
        assert pair[1].untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
        pair[first].add_(100)
        assert torch.equal(pair[first].cpu(), base + 100)
        assert torch.equal(pair[second].cpu(), base)
    x = torch.ones(3, device="neuron", requires_grad=True)
    x._lazy_clone().mul(2).sum().backward()
    assert x.grad.cpu().tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.int16, torch.complex64])
def test_a_storage_slice_shares_the_bytes_it_names(dtype):
    # UntypedStorage[a:b] is a new storage over those bytes (PyTorch's C++ slice). On neuron that
    # storage was not the emulator's, so reading it failed with "found a neuron storage with no CPU
    # memory behind it" (PyTorch's test_torch test_storage, through bytes_to_scalar, every dtype).
    v = make_tensor((3, 5), dtype=dtype, device="neuron", low=-9, high=9)
    c = v.cpu()
    s, cs = v.untyped_storage(), c.untyped_storage()
    size = v.element_size()
    for start, stop in (
        (0, size),
        (size * 4, size * 7),
        (size * 14, None),
        (size * 20, size * 30),
        (-size, None),
    ):
        sl = s[start:stop]
        assert sl.device == v.device and sl.nbytes() == cs[start:stop].nbytes()
        assert sl.tolist() == cs[start:stop].tolist()
    sl = s[size * 2 : size * 3]
    sl.copy_(torch.full((1,), 7, dtype=dtype).untyped_storage())  # writes reach the sliced tensor
    assert v.flatten()[2].item() == 7 and (v.flatten()[:2].cpu() == c.flatten()[:2]).all()
    allocated = torch.neuron.memory_allocated()
    kept = s[size : size * 2]  # not an allocation: it keeps the sliced storage (and its count) alive
    assert torch.neuron.memory_allocated() == allocated
    del v, s, sl
    assert kept.tolist() == cs[size : size * 2].tolist()
    with pytest.raises(RuntimeError, match="step"):
        kept[::2]


def test_is_same_size_takes_tensors_on_two_devices():
    # PyTorch declares is_same_size device_check: NoCheck (a CUDA and a CPU tensor compare); the
    # emulator once raised its device mismatch, which broke forward-mode AD's copy_ of a neuron dual
    # tensor into a CPU tensor (PyTorch's test_autograd test_copy_forward_ad_same_layout_copies_grad).
    n = torch.ones(2, 1, device="neuron")
    assert n.is_same_size(torch.zeros(2, 1)) and torch.zeros(2, 1).is_same_size(n)
    assert not n.is_same_size(torch.zeros(1, 2))
    assert not n.is_set_to(torch.ones(2, 1)) and not torch.ones(2, 1).is_set_to(n)  # NoCheck too
    assert n.is_set_to(n) and n.is_set_to(n.view(2, 1)) and not n.is_set_to(n.clone())
    import torch.autograd.forward_ad as fwad

    tangent = torch.tensor([[5.0], [6.0]], device="neuron")
    with fwad.dual_level():
        dual = fwad.make_dual(torch.tensor([[3.0], [4.0]], device="neuron"), tangent)
        cpu = torch.tensor([[1.0], [2.0]])
        cpu.copy_(dual)
        primal, copied = fwad.unpack_dual(cpu)
        assert primal.tolist() == [[3.0], [4.0]] and copied.tolist() == [[5.0], [6.0]]
        # PyTorch's copy_ clones the source's tangent (on its device, as with a CUDA source)
        assert copied is not tangent and copied.device == tangent.device


_OVERLAPPING_WRITES = {
    "index_add_": lambda y, i: y.index_add_(0, i, y[:3]),
    "index_copy_": lambda y, i: y.index_copy_(0, i, y[:3]),
    "put_": lambda y, i: y.put_(i[0], y[0]),
    "index_put_": lambda y, i: y.index_put_((i,), y[:3]),
}


@pytest.mark.parametrize("write", sorted(_OVERLAPPING_WRITES))
@pytest.mark.parametrize("make", [torch.rand, torch.zeros])
def test_a_write_from_a_view_of_the_same_memory_is_refused_as_on_the_cpu(write, make):
    # ATen refuses an in-place write whose source shares the written tensor's memory ("unsupported
    # operation"): it compares the two tensors' storages. On the Python per-op path the first CPU
    # view of a fresh result (torch.rand's) was the kernel's own CPU tensor, over another storage
    # than the views made later, so y.index_add_(0, i, y[:3]) ran (PyTorch's test_torch
    # test_index_add/index_copy/put/index_put_mem_overlap).
    with pytest.raises(RuntimeError, match="unsupported operation"):  # the CPU's own answer
        _OVERLAPPING_WRITES[write](make(6), torch.tensor([2, 1, 0]))
    with pytest.raises(RuntimeError, match="unsupported operation"):
        _OVERLAPPING_WRITES[write](make(6, device="neuron"), torch.tensor([2, 1, 0], device="neuron"))


@pytest.mark.parametrize("empty_first", [False, True])
def test_swapping_storage_memory_moves_the_values_and_keeps_the_views(empty_first):
    # UntypedStorage._swap_data_ptr_ exchanges the memory behind two storages; every tensor on either
    # storage then reads the other's values. On the Python per-op path the emulator's CPU alias of
    # each storage stayed behind, so the tensors still read their old values (PyTorch's test_torch
    # test_swap_data_ptr_with_empty/_non_empty/_preserves_views).
    base = torch.neuron.memory_allocated()
    x = torch.arange(16.0, device="neuron").view(4, 4)
    y = torch.arange(16.0, 32.0, device="neuron").view(4, 4)
    x_view = x[1:3]
    x_data, y_data = x.cpu(), y.cpu()
    xs, ys = x.untyped_storage(), y.untyped_storage()
    if empty_first:
        xs.resize_(0)
    held = (1 if empty_first else 2) * 16 * 4  # bytes allocated on the device, before and after the swap
    xs._swap_data_ptr_(ys)
    assert torch.equal(x.cpu(), y_data) and torch.equal(x_view.cpu(), y_data[1:3])
    assert ys.nbytes() == (0 if empty_first else 16 * 4)
    if not empty_first:
        assert torch.equal(y.cpu(), x_data)
        y.add_(1)  # writes land in the memory y now has, not in x's
        assert torch.equal(y.cpu(), x_data + 1) and torch.equal(x.cpu(), y_data)
    assert torch.neuron.memory_allocated() == base + held
    del y, ys
    assert torch.equal(x_view.cpu(), y_data[1:3])  # x kept the memory it took alive
    del x, xs, x_view
    assert torch.neuron.memory_allocated() == base
