"""What CUDA and TorchNeuron refuse, the emulated device refuses too, with the error they raise.

* ``out=`` and in-place outputs must be on the device: the 0-dim CPU tensor that is accepted as
  an *input* (a scalar) is refused as an *output*, with CUDA's device error (PyTorch's
  TensorIterator exempts CPU scalars only among inputs).
* Indices of ``x[i]`` on neither the CPU nor ``x``'s device: CUDA's index kernel checks them
  itself and says so ("indices should be either on cpu or on the same device as the indexed
  tensor"), where other ops report the device mismatch.
* Quantized tensors: TorchNeuron's operator compatibility table marks the quantized operator
  variants ``N`` (not supported); the emulator refuses them with one error naming the source.

Both per-op paths are covered: the compiled one by default, the Python one with
``ACCEL_NEURON_EMULATOR_HOT_PATH=python``.
"""

from __future__ import annotations

import gc

import pytest
import torch

import accel_abstraction as accel

pytestmark = pytest.mark.usefixtures("neuron_emulator")

_DEVICE_ERROR = (
    r"Expected all tensors to be on the same device, but found at least two devices, neuron:0 and cpu!"
)


@pytest.mark.parametrize(
    "call",
    [
        lambda a, out: torch.add(a, a, out=out),
        lambda a, out: torch.mul(a, torch.tensor(2.0), out=out),
        lambda a, out: torch.sum(a, 0, out=out),
        lambda a, out: torch.exp(a, out=out),
        lambda a, out: out.add_(a.sum()),
        lambda a, out: out.mul_(a[0]),
        lambda a, out: out.copy_(a.sum()).add_(a[0]),
    ],
    ids=["add_out", "mul_out_scalar_input", "sum_out", "exp_out", "add_", "mul_", "add_after_copy"],
)
def test_a_0dim_cpu_output_is_refused_and_left_untouched(call) -> None:
    a = torch.arange(1.0, 4.0, device="neuron")
    out = torch.full((), 7.0)
    with pytest.raises(RuntimeError, match=_DEVICE_ERROR):
        call(a, out)
    assert out.item() in (7.0, 6.0)  # untouched (add_after_copy: the legitimate copy_ ran first)


def test_nonzero_into_a_cpu_out_is_refused() -> None:
    x = torch.tensor([0.0, 1.0, 2.0], device="neuron")
    out = torch.empty((), dtype=torch.long)
    with pytest.raises(RuntimeError, match=_DEVICE_ERROR):
        torch.nonzero(x, out=out)
    assert out.shape == ()


def test_0dim_cpu_inputs_and_neuron_outputs_still_work() -> None:
    a = torch.arange(1.0, 4.0, device="neuron")
    out = torch.empty(3, device="neuron")
    torch.mul(a, torch.tensor(2.0), out=out)
    assert torch.equal(out.cpu(), torch.tensor([2.0, 4.0, 6.0]))
    a.mul_(torch.tensor(3.0))
    assert torch.equal(a.cpu(), torch.tensor([3.0, 6.0, 9.0]))
    grown = torch.empty(0, dtype=torch.long, device="neuron")
    torch.nonzero(a, out=grown)
    assert grown.device.type == "neuron" and grown.shape == (3, 1)
    cpu = torch.zeros(3)
    cpu.copy_(a)  # copies mix devices by design
    assert torch.equal(cpu, a.cpu())


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.quantize_per_tensor(torch.randn(4, device="neuron"), 0.1, 0, torch.qint8),
        lambda: torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.quint8).to("neuron"),
        lambda: torch.quantize_per_channel(
            torch.randn(2, 3, device="neuron"),
            torch.tensor([0.1, 0.2], device="neuron"),
            torch.tensor([0, 0], device="neuron"),
            0,
            torch.qint8,
        ),
        lambda: torch.quantize_per_tensor_dynamic(torch.randn(4, device="neuron"), torch.quint8, False),
        lambda: torch._empty_affine_quantized(
            (2, 2), scale=0.1, zero_point=0, dtype=torch.quint8, device="neuron"
        ),
    ],
    ids=["quantize_per_tensor", "quantized_to_neuron", "quantize_per_channel", "dynamic", "empty_quantized"],
)
def test_quantized_tensors_are_refused_as_torchneuron_refuses_them(make) -> None:
    from accel_neuron.emulator.errors import EmulatorError, NeuronUnsupportedError

    gc.collect()
    before = torch.neuron.memory_allocated()
    with pytest.raises(
        NeuronUnsupportedError, match=r"quantized tensor .*TorchNeuron marks it N.*Supported PyTorch APIs"
    ) as info:
        make()
    assert isinstance(info.value, NotImplementedError) and isinstance(info.value, EmulatorError)
    assert isinstance(info.value, accel.AccelError)
    del info  # its traceback holds the kernel's frames, and so the op's neuron input
    gc.collect()
    assert torch.neuron.memory_allocated() == before  # nothing kept from the refused result


def test_dequantized_data_moves_to_neuron() -> None:
    q = torch.quantize_per_tensor(torch.tensor([0.5, 1.0]), 0.5, 0, torch.qint8)
    assert torch.equal(q.dequantize().to("neuron").cpu(), torch.tensor([0.5, 1.0]))


@pytest.mark.parametrize(
    ("module", "x", "message"),
    [
        (lambda: torch.nn.Embedding(4, 4), lambda: torch.rand(4, 4, device="neuron"), "indices.*scalar type.*Long.*Int"),
        (lambda: torch.nn.GRUCell(10, 20), lambda: torch.randn(3, 11, device="neuron"), "inconsistent input_size: got 11 expected 10"),
        (lambda: torch.nn.LSTMCell(10, 20), lambda: torch.randn(3, 11, device="neuron"), "inconsistent input_size: got 11 expected 10"),
    ],
    ids=["embedding", "gru_cell", "lstm_cell"],
)
def test_a_composite_ops_own_check_speaks_before_the_device_mismatch(module, x, message) -> None:
    """As on CUDA (PyTorch's test_modules test_errors): a CPU module given a wrong neuron input
    reports the wrong argument, as the composite op checks it before any kernel compares devices."""
    with pytest.raises(RuntimeError, match=message):
        module()(x())


def test_a_right_argument_on_the_wrong_device_is_still_a_device_mismatch() -> None:
    for module, x in [(torch.nn.GRUCell(10, 20), torch.randn(3, 10, device="neuron")),
                      (torch.nn.Embedding(4, 4), torch.zeros(4, dtype=torch.long, device="neuron")),
                      (torch.nn.Linear(3, 2), torch.ones(2, 3, device="neuron"))]:  # fmt: skip
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            module(x)


def test_indices_off_the_indexed_tensors_device_get_cudas_index_error() -> None:
    """PyTorch's test_advancedindex_mixed_devices_error: ``x[i]`` (aten::index) checks its indices'
    devices itself, before any device comparison, so CUDA words the error for the indices."""
    x = torch.randn(3, 4, 4, 4, 3)
    ia, ib = torch.tensor([0, 2, 1], device="neuron"), torch.tensor([0, 2, 1], device="neuron")
    on_cpu = r"indices should be either on cpu or on the same device as the indexed tensor \(cpu\)"
    for index in (lambda: x[:, ia, None, ib, 0], lambda: x[ib], lambda: x[:, ia.cpu(), None, ib, 0]):
        with pytest.raises(RuntimeError, match=on_cpu):
            index()
    on_device = x.to("neuron")
    assert torch.equal(on_device[ia.cpu()].cpu(), x[ia.cpu()])  # CPU indices of a device tensor: allowed
    if torch.neuron.device_count() > 1:  # type: ignore[attr-defined]
        with pytest.raises(RuntimeError, match=r"same device as the indexed tensor \(neuron:0\)"):
            on_device[ia.to("neuron:1")]
    with pytest.raises(RuntimeError, match=_DEVICE_ERROR):  # index_select has no such check
        x.index_select(0, ia)
