"""The compiled per-op path (``csrc/kernels.cpp``) and the Python one share one storage bookkeeping.

Tensors made by either path are the same kind: views, in-place results and memory statistics
agree whichever path made or touched them; ``ACCEL_NEURON_EMULATOR_HOT_PATH`` selects the path.
"""

from __future__ import annotations

import gc
import json
from functools import partial

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("neuron_emulator")


def test_a_dense_op_takes_the_compiled_path_and_equals_the_cpu(compiled):
    a, b = torch.randn(5, 7), torch.randn(5, 7)
    na, nb = a.to("neuron"), b.to("neuron")
    fast, slow = compiled.path_counts()
    out = torch.addcmul(na, na, nb, value=0.5)
    fast2, slow2 = compiled.path_counts()
    assert (fast2 - fast, slow2 - slow) == (1, 0)
    assert out.device == torch.device("neuron:0")
    assert torch.equal(out.cpu(), torch.addcmul(a, a, b, value=0.5))


def test_a_kernels_fresh_result_is_a_neuron_tensor_like_any_other(compiled):
    # A CPU kernel's fresh result is turned into the neuron result in place (allocator.cpp's to_neuron,
    # `reuse`): its keys (autocast's included), device, version, inference flag and memory statistics must
    # be those of a neuron tensor made directly, for typed, boxed and tuple results, in and out of inference mode.
    gc.collect()
    a = torch.randn(4, 6, generator=torch.Generator().manual_seed(5))
    na = a.to("neuron")
    base = torch.neuron.memory_allocated()
    for inference in (False, True):
        with torch.inference_mode(inference):
            made = torch.empty(3, device="neuron")
            # typed, boxed and tuple results
            results = [na + 1, torch.sin(na), *torch.sort(na, dim=1), torch.cumsum(na, 0)]
            expected = [a + 1, torch.sin(a), *torch.sort(a, dim=1), torch.cumsum(a, 0)]
        for got, want in zip(results, expected, strict=True):
            assert torch._C._dispatch_keys(got) == torch._C._dispatch_keys(made)
            assert got.device == torch.device("neuron:0") and got.untyped_storage().device == got.device
            assert got.is_inference() == inference and not got.is_cpu
            assert torch.equal(got.cpu(), want)
            if not inference:
                assert got._version == 0
                got.add_(1)  # the result's own version counter
                assert got._version == 1
        held = sum(r.untyped_storage().nbytes() for r in results) + made.untyped_storage().nbytes()
        assert torch.neuron.memory_allocated() - base == held
        del made, results, got
        assert torch.neuron.memory_allocated() == base
    x = na.clone().requires_grad_(True)
    (torch.sin(x) * 3).sum().backward()  # autograd meta lands on the converted results as on any tensor
    assert torch.equal(x.grad.cpu(), torch.cos(a) * 3)


def test_typed_kernels_return_in_place_arguments_and_hand_rejected_dtypes_to_the_python_kernel(compiled):
    # mm, mul_, exp, ... have typed (unboxed) kernels on the compiled path: the same contract as the boxed one
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    na, nb = a.to("neuron"), b.to("neuron")
    fast, slow = compiled.path_counts()
    prod = torch.mm(na, nb)
    same = na.mul_(torch.tensor(2.0))  # in place, with a 0-dim CPU tensor: returns its argument itself
    assert compiled.path_counts() == (fast + 2, slow)
    assert same is na and prod.device == torch.device("neuron:0")
    assert torch.equal(prod.cpu(), torch.mm(a, b)) and torch.equal(na.cpu(), a * 2)
    c = torch.randn(6, dtype=torch.complex64, generator=torch.Generator().manual_seed(2)).to(torch.complex32)
    got = torch.exp(c.to("neuron"))  # complex32: the CPU kernel rejects it, the Python kernel computes it
    assert compiled.path_counts()[1] == slow + 1
    assert torch.equal(torch.view_as_real(got.cpu()), torch.view_as_real(torch.exp(c.to(torch.complex64)).to(got.dtype)))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.mm(na, b)  # a CPU matrix: the Python kernel's device error


def test_factories_have_typed_kernels_that_place_results_as_the_device_argument_says(compiled):
    # empty and empty_strided (what zeros, ones, full, *_like and new_* on the device end in) are served
    # unboxed: the device argument picks the device, a neuron device that does not exist and a device
    # past its capacity still raise the Python kernel's and the allocator's errors
    for name in ("aten::empty.memory_format", "aten::empty_strided"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1"), name
    last = torch.neuron.device_count() - 1
    fast, slow = compiled.path_counts()
    a = torch.empty(2, 3, device=f"neuron:{last}", dtype=torch.float16)
    b = torch.empty_strided((2, 3), (1, 2), device="neuron")
    z = torch.zeros(4, device="neuron")
    assert compiled.path_counts()[1] == slow
    assert (a.device, a.dtype, a.shape) == (torch.device(f"neuron:{last}"), torch.float16, (2, 3))
    assert a.untyped_storage().device == a.device
    assert (b.device, b.stride()) == (torch.device("neuron:0"), (1, 2))
    assert torch.equal(z.cpu(), torch.zeros(4))
    assert torch._C._dispatch_keys(a) == torch._C._dispatch_keys(z)
    with torch.neuron.device(last):
        assert torch.empty(1, device="neuron").device == torch.device(f"neuron:{last}")  # no index: the current
    with pytest.raises(Exception, match="does not exist"):
        torch.empty(1, device=f"neuron:{last + 1}")
    with pytest.raises(torch.OutOfMemoryError, match="Tried to allocate"):
        torch.empty(1 << 60, dtype=torch.uint8, device="neuron")


def test_item_takes_the_compiled_path_and_reads_each_dtype_exactly(compiled):
    # Tensor.item() (_local_scalar_dense) has a typed kernel: a Python number of the tensor's kind, exact
    values = [
        torch.tensor(2**62 + 1),  # past float64's integers
        torch.tensor(True),
        torch.tensor(-0.0),
        torch.tensor(float("nan"), dtype=torch.float16),
        torch.tensor(1.5 - 2j),
        torch.tensor([[3.25]], dtype=torch.bfloat16),  # one element, not 0-dim
    ]
    on_device = [v.to("neuron") for v in values]
    fast, slow = compiled.path_counts()
    got = [v.item() for v in on_device]
    assert compiled.path_counts() == (fast + len(values), slow)
    for g, v in zip(got, values, strict=True):
        want = v.item()
        assert type(g) is type(want) and (g == want or (g != g and want != want))
        assert str(g) == str(want)  # -0.0 keeps its sign
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        torch.ones(2, device="neuron").item()


def test_cpu_views_lent_again_follow_each_use_of_a_storage(compiled):
    # a storage's CPU view goes back to it after an op and is lent to the next one (views.cpp's
    # lend_view): each use still sees its own geometry, dtype and the storage's current memory
    a = torch.randn(4, 6, generator=torch.Generator().manual_seed(3))
    na = a.to("neuron")
    xs = [torch.randn(5, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    nxs = [x.to("neuron") for x in xs]
    for _ in range(3):
        assert torch.equal((na + 1).cpu(), a + 1)
        assert torch.equal((na.t() * 2).cpu(), a.t() * 2)  # the same storage, transposed
        assert torch.equal(na[1:, 2:].sum(0).cpu(), a[1:, 2:].sum(0))  # offset and strides
        assert torch.equal(torch.mul(na.view(torch.int32), 1).cpu(), a.view(torch.int32))  # another dtype
        assert torch.equal(torch.mul(na, na).cpu(), a * a)  # one storage twice in a call
        torch._foreach_mul_(nxs, 0.5)
        torch._foreach_mul_(xs, 0.5)
        assert all(torch.equal(n.cpu(), x) for n, x in zip(nxs, xs, strict=True))
    with torch.inference_mode():
        assert torch.equal((na - 1).cpu(), a - 1)
    assert torch.equal((na - 2).cpu(), a - 2)
    na.untyped_storage().resize_(2 * na.untyped_storage().nbytes())  # new memory under the storage
    na.mul_(3.0)
    assert torch.equal(na.cpu(), a * 3)


def test_rare_cases_go_to_the_python_kernel(compiled):
    na = torch.randn(4, device="neuron")
    fast, slow = compiled.path_counts()
    torch.randn(3, device="neuron", generator=torch.Generator(device="neuron"))  # a neuron generator
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        na + torch.ones(4)  # a CPU tensor that is not 0-dim: the Python kernel's error
    assert compiled.path_counts()[1] - slow == 2
    assert torch.equal((na + torch.tensor(2.0)).cpu(), na.cpu() + 2)  # 0-dim CPU tensors stay fast


def test_factories_and_default_generators_on_the_compiled_path_match_the_python_kernel(compiled):
    fast, slow = compiled.path_counts()
    torch.neuron.manual_seed(5)
    a = torch.empty(1000, device="neuron").bernoulli_(0.3)  # device argument; default generator
    b = torch.arange(6, device="neuron:1") if torch.neuron.device_count() > 1 else None
    assert compiled.path_counts()[1] == slow
    torch.neuron.manual_seed(5)
    g = torch.Generator(device="neuron")
    g.manual_seed(5)  # the same stream as the default generator after manual_seed(5)
    c = torch.empty(1000, device="neuron").bernoulli_(0.3, generator=g)  # the Python kernel
    assert torch.equal(a.cpu(), c.cpu())
    if b is not None:
        assert b.device == torch.device("neuron:1") and b.cpu().tolist() == list(range(6))


def test_tensors_from_either_path_share_storages_and_memory_statistics(compiled):
    gc.collect()
    base = torch.neuron.memory_allocated()
    made_by_python = torch.zeros(100, device="neuron")  # factory: the Python kernel
    made_by_cpp = made_by_python + 1  # the compiled kernel
    assert torch.neuron.memory_allocated() - base == 800
    view = made_by_cpp[10:20]  # a view of a compiled-path tensor
    view.fill_(7.0)  # in-place through the view
    assert made_by_cpp.untyped_storage().data_ptr() == view.untyped_storage().data_ptr()
    assert made_by_cpp[15].item() == 7.0
    made_by_python.copy_(made_by_cpp)  # a copy: the Python kernel, into a Python-made tensor
    assert torch.equal(made_by_python.cpu(), made_by_cpp.cpu())
    assert torch.neuron.memory_allocated() - base == 800
    del made_by_cpp, view
    assert torch.neuron.memory_allocated() - base == 400
    del made_by_python
    assert torch.neuron.memory_allocated() == base


def test_results_over_a_storages_memory_get_that_storage_and_count_nothing(compiled):
    # A kernel's fresh result is not in the C++ core's data-pointer map; a CPU tensor over its memory that
    # left the C++ kernels (cpu_view: what the Python kernels and islands compute on) must still find it.
    ops = torch.ops.accel_neuron_emu
    gc.collect()
    base = torch.neuron.memory_stats()
    x = torch.arange(16.0, device="neuron") * 2  # a fresh result of the compiled kernel
    allocated = torch.neuron.memory_allocated()
    back = ops.to_neuron(ops.cpu_view(x)[4:], 0)  # a CPU view of x's memory, made a neuron tensor again
    assert back.untyped_storage()._cdata == x.untyped_storage()._cdata
    assert torch.neuron.memory_allocated() == allocated
    # a copy-on-write clone outliving the storage its memory was made for: found as well, not counted again
    clone = x._lazy_clone()
    del x, back
    gc.collect()
    again = ops.to_neuron(ops.cpu_view(clone), 0)
    assert again.untyped_storage()._cdata == clone.untyped_storage()._cdata
    assert torch.neuron.memory_allocated() == allocated
    assert torch.equal(again.cpu(), torch.arange(16.0) * 2)
    del clone, again
    for _ in range(20):  # fresh results, in-place results and views: every allocation freed once
        y = (torch.ones(8, device="neuron") + 1).mul_(3)[2:5]
    del y
    gc.collect()
    end = torch.neuron.memory_stats()
    assert end["allocated_bytes.all.current"] == base["allocated_bytes.all.current"]
    made = end["allocation.all.allocated"] - base["allocation.all.allocated"]
    assert made == end["allocation.all.freed"] - base["allocation.all.freed"] and made >= 41


def test_storage_resize_moves_memory_and_statistics(compiled):
    gc.collect()
    base = torch.neuron.memory_allocated()
    t = torch.arange(8.0).to("neuron")
    st = t.untyped_storage()
    st.resize_(0)
    assert torch.neuron.memory_allocated() == base
    st.resize_(64)
    assert torch.neuron.memory_allocated() - base == 64
    t.set_(st, 0, (16,), (1,))
    (t * 2).sum().item()  # the resized storage is usable on the compiled path
    del t, st
    gc.collect()
    assert torch.neuron.memory_allocated() == base


def test_second_device_results_stay_on_their_device(compiled):
    if torch.neuron.device_count() < 2:
        pytest.skip("needs two emulated devices")
    a = torch.randn(3, device="neuron:1")
    out = a * 3
    assert out.device == torch.device("neuron:1")
    assert torch.equal(out.cpu(), a.cpu() * 3)


CHOICE = """
import json, os, torch
from accel_neuron import emulator
from accel_neuron.emulator import native
emulator.install()
a = torch.randn(6, 6)
n = a.to("neuron")
out = {"path": native.hot_path(), "equal": torch.equal((n @ n).relu().cpu(), (a @ a).relu())}
print(json.dumps(out))
"""


def test_the_python_path_is_selected_by_environment(run_python, monkeypatch):
    monkeypatch.setenv("ACCEL_NEURON_EMULATOR_HOT_PATH", "python")
    result = run_python(CHOICE)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"path": "python", "equal": True}


def test_an_unknown_hot_path_names_the_variable(run_python, monkeypatch):
    monkeypatch.setenv("ACCEL_NEURON_EMULATOR_HOT_PATH", "turbo")
    result = run_python(CHOICE)
    assert result.returncode != 0
    assert "ACCEL_NEURON_EMULATOR_HOT_PATH='turbo' (environment)" in result.stderr


DROPOUT = """
import json
import torch
import torch.nn.functional as F
import torch.nn.functional as F
from accel_neuron import emulator
from accel_neuron.emulator import native
emulator.install()


def draws():
    torch.manual_seed(3)
    x = torch.arange(96.0).view(4, 24).to("neuron").requires_grad_()
    y = F.dropout(x, 0.25, True)
    y.square().sum().backward()
    z = torch.ones(40, device="neuron")
    F.dropout(z, 0.5, True, inplace=True)
    gone = F.dropout(torch.ones(5, device="neuron"), 1.0, True)
    after = torch.rand(3, device="neuron")  # the stream goes on where dropout left it
    return native.hot_path(), [t.detach().cpu().tolist() for t in (y, x.grad, z, gone, after)]
"""


def _draws_here_and_on_the_python_path(script: str, run_python, monkeypatch) -> tuple[list, list]:
    """`script`'s draws() here (the compiled path) and in a fresh process on the Python per-op path."""
    namespace: dict = {}
    exec(script.replace("emulator.install()", ""), namespace)
    here, got = namespace["draws"]()
    monkeypatch.setenv("ACCEL_NEURON_EMULATOR_HOT_PATH", "python")
    result = run_python(script + "print(json.dumps(draws()))")
    assert result.returncode == 0, result.stderr[-2000:]
    path, expected = json.loads(result.stdout.strip().splitlines()[-1])
    assert (path, here) == ("python", "native")
    return got, expected


def test_compiled_dropout_draws_the_python_kernels_stream_bitwise(compiled, run_python, monkeypatch):
    # the C++ dropout kernels (csrc/dropout.cpp) replace composite_overrides' Python ones on this path
    got, expected = _draws_here_and_on_the_python_path(DROPOUT, run_python, monkeypatch)
    assert got == expected
    assert 0 < sum(v == 0 for v in got[0][0] + got[0][1] + got[0][2] + got[0][3]) < 96  # some dropped, not all
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(torch.ones(3, device="neuron"), 1.5)


def test_every_routed_op_exists_in_this_torch():
    from accel_neuron.emulator import routing

    python_only, copies, views = routing.compiled_path_tables()
    names = [*python_only, *copies, *routing.KEEP_DECOMPOSITION]
    missing = [n for n in names if not torch._C._dispatch_has_kernel(n)]
    missing += [v for v in views if not hasattr(torch.ops.aten, v.partition(".")[0])]
    assert missing == [], f"routing.py names ops this torch lacks: {missing}"


def test_a_python_only_route_reaches_the_python_kernel_from_the_compiled_path(compiled):
    from accel_neuron.emulator import routing

    assert "aten::_pack_padded_sequence" in routing.PYTHON_ONLY
    x = torch.randn(3, 2, 4, device="neuron")
    fast, slow = compiled.path_counts()
    data, batch_sizes = torch.ops.aten._pack_padded_sequence(x, torch.tensor([3, 2]), False)
    assert compiled.path_counts()[1] > slow
    assert data.device == x.device and batch_sizes.is_cpu


SEEDED = """
import json
import torch
from accel_neuron import emulator
from accel_neuron.emulator import native
emulator.install()


def draws():
    torch.manual_seed(7)
    cpu_before = torch.rand(2)  # the CPU stream, interleaved with the device's
    x = torch.ones(33, device="neuron")
    out = [
        torch.randn(1, device="neuron"),  # odd sizes: the generator keeps a cached normal sample
        torch.randn(3, dtype=torch.float64, device="neuron"),
        torch.randn(17, 5, device="neuron"),
        torch.rand(9, device="neuron"),
        torch.randint(0, 100, (7,), device="neuron"),
        torch.randint(5, (4,), device="neuron"),
        torch.randperm(9, device="neuron"),
        torch.randn_like(x),
        torch.randint_like(x, 10),
        torch.native_dropout(x, 0.5, True)[0],
        torch.empty(5, device="neuron").normal_(),  # a Generator? argument: the device's default one
    ]
    try:
        torch.randn(3, dtype=torch.int64, device="neuron")  # refused by the CPU kernel: same error on both paths
    except NotImplementedError as e:
        out.append(str(e).splitlines()[0])
    out.append(torch.randn(2, device="neuron"))  # the stream goes on where the refused call left it
    state = torch.neuron.get_rng_state()
    return native.hot_path(), [
        o if isinstance(o, str) else o.cpu().tolist() for o in [cpu_before, *out, torch.rand(3), state]
    ]
"""


def test_random_ops_without_a_generator_take_the_compiled_path_and_draw_the_python_kernels_stream(
    compiled, run_python, monkeypatch
):
    # randn, randint, randperm, *_like, native_dropout: the C++ kernel swaps the device's stream into the
    # CPU default generator (SwappedIn) as rng.swapped_in does; the numbers, the device's state after them
    # and the CPU stream around them are the Python kernel's, bit for bit
    fast, slow = compiled.path_counts()
    torch.randn(4, device="neuron")
    torch.randint(0, 10, (64,), device="neuron")
    assert compiled.path_counts()[1] == slow
    got, expected = _draws_here_and_on_the_python_path(SEEDED, run_python, monkeypatch)
    assert got == expected
    assert "not implemented for 'Long'" in got[-4]


OUTS = """
import json, warnings
import torch
from accel_neuron import emulator
from accel_neuron.emulator import native
emulator.install()


def draws():
    warnings.simplefilter("ignore")  # "An output with one or more elements was resized", on both paths
    torch.neuron.manual_seed(1)
    start = torch.neuron.memory_allocated()
    x = torch.arange(6.0, device="neuron").reshape(2, 3)
    got, keep = [], []

    def rec(t):
        keep.append(t)
        got.append([list(t.shape), list(t.stride()), t.storage_offset(), t.untyped_storage().nbytes(), t.cpu().tolist()])

    o = torch.empty(2, 3, device="neuron")
    rec(torch.add(x, 1, out=o))  # the shape it has
    base = torch.zeros(20, device="neuron")
    torch.mul(x, 2, out=base[2:])  # resized within its storage, from an offset
    rec(base[2:].view(-1)[:6].view(2, 3))
    o = base[2:]
    torch.mul(x, 3, out=o)
    rec(o)
    rec(base)
    o = torch.empty(0, device="neuron")
    torch.sub(x, 1, out=o)  # must grow: the Python kernel
    rec(o)
    v, i = torch.empty(0, device="neuron"), torch.empty(5, dtype=torch.long, device="neuron")
    torch.max(x, 1, out=(v, i))
    rec(v)
    rec(i)
    o = torch.empty(4, device="neuron")
    torch.randn(4, out=o)  # random with out=: the device's stream
    rec(o)
    o = torch.empty(2, 3, device="neuron")
    torch.sum(x, 0, keepdim=True, out=o)
    rec(o)
    for bad in (torch.empty(2, 3), torch.empty(2, 3, dtype=torch.long, device="neuron")):
        try:
            torch.add(x, 1, out=bad)
        except RuntimeError as e:
            got.append(str(e).splitlines()[0])
    got.append(torch.neuron.memory_allocated() - start)
    return native.hot_path(), got
"""


def test_out_arguments_take_the_compiled_path_and_end_as_on_the_python_path(compiled, run_python, monkeypatch):
    # out= arguments (one tensor each) are served by the compiled kernel, which makes each neuron output
    # follow its CPU view (resized in place by the CPU kernel); one that must grow still takes the Python
    # kernel. Shapes, strides, offsets, storages, values, errors and memory statistics are the Python path's.
    x = torch.arange(6.0, device="neuron").reshape(2, 3)
    o = torch.empty(2, 3, device="neuron")
    fast, slow = compiled.path_counts()
    torch.add(x, 1, out=o)
    torch.sum(x, 0, keepdim=True, out=o[0:1])
    assert compiled.path_counts()[1] == slow
    got, expected = _draws_here_and_on_the_python_path(OUTS, run_python, monkeypatch)
    assert got == expected
    assert got[1][:3] == [[2, 3], [3, 1], 2] and got[-3].startswith("Expected all tensors to be on the same device")


def test_both_paths_catch_c10s_own_words_for_a_storage_that_cannot_grow():
    """c10's refusal to grow a CPU alias of neuron memory is what both paths catch, in one set of words."""
    from pathlib import Path

    from accel_neuron.emulator import storage
    from accel_neuron.emulator.errors import C10_NOT_RESIZABLE, refuses_to_grow

    borrowed = torch.frombuffer(bytearray(12), dtype=torch.float32)  # memory c10 does not own, as an alias's
    with pytest.raises(RuntimeError) as caught:
        borrowed.resize_(100)
    assert refuses_to_grow(caught.value), f"c10's words changed: {caught.value}"
    assert not refuses_to_grow(RuntimeError("shape mismatch")) and not refuses_to_grow(ValueError(C10_NOT_RESIZABLE))
    kernels_cpp = Path(storage.__file__).parent / "csrc" / "kernels.cpp"
    assert f'find("{C10_NOT_RESIZABLE}")' in kernels_cpp.read_text(encoding="utf-8"), (
        "csrc/kernels.cpp must_grow matches other words than errors.C10_NOT_RESIZABLE"
    )


def test_set_with_a_storage_and_deepcopy_take_the_compiled_path(compiled):
    import copy

    a = torch.randn(3, 4)
    n = a.to("neuron")
    fast, slow = compiled.path_counts()
    dup = copy.deepcopy(n)  # storage clone and copy_, then set_: each set_ on the compiled path
    whole = torch.empty(0, device="neuron").set_(n.untyped_storage())
    assert compiled.path_counts()[1] == slow
    assert dup.untyped_storage().data_ptr() != n.untyped_storage().data_ptr()
    assert torch.equal(dup.cpu(), a) and torch.equal(whole.cpu(), a.reshape(-1))


def test_set_with_a_storage_on_another_device_raises_the_python_kernels_error():
    t = torch.empty(0, device="neuron")
    with pytest.raises(RuntimeError, match="to a storage on device cpu. This is no longer allowed"):
        t.set_(torch.UntypedStorage(16))
    with pytest.raises(RuntimeError, match="to a storage on device cpu. This is no longer allowed"):
        t.set_(torch.UntypedStorage(16), 0, (4,), (1,))


def _attention_ops(fn) -> list[str]:
    """The attention ops (and bmm, the math path's) that `fn` dispatches below autograd."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    with Seen() as seen:
        fn()
    return [op for op in seen.ops if "attention" in op or op == "aten.bmm"]


def test_compiled_sdpa_is_atens_composite_with_the_cpus_kernel_choice(compiled):
    # No Python kernel at AutogradPrivateUse1 on this path: ATen's composite runs, asking the C++ core's
    # entry in the SDPA chooser (csrc/sdpa.cpp), which answers what the CPU answers.
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    assert not has("aten::scaled_dot_product_attention", "AutogradPrivateUse1")
    flash = torch.randn(2, 3, 5, 8)  # 4 dims, one head dim: the CPU takes its flash kernel
    kernel, math = ["aten._scaled_dot_product_flash_attention_for_cpu"], ["aten.bmm"] * 2
    for view, mask, expected in (
        (lambda t: t, None, kernel),
        (lambda t: t[..., ::2], None, math),  # last stride 2: the math path
        (lambda t: t, torch.randn(5, 5), kernel),  # mask.t(), last stride 5: flash on the CPU, not on a GPU
    ):
        for d in ("cpu", "neuron"):
            q, m = view(flash.to(d)), None if mask is None else mask.to(d).t()
            seen = _attention_ops(partial(F.scaled_dot_product_attention, q, q, q, attn_mask=m))
            assert seen == expected, d
    # taken back, the composite runs the math path on neuron (what PyTorch does for a device without an entry)
    compiled.enable_native_sdpa(False)
    try:
        q = flash.to("neuron")
        assert _attention_ops(partial(F.scaled_dot_product_attention, q, q, q)) == math
    finally:
        compiled.enable_native_sdpa(True)
