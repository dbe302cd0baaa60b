"""Flex attention runs on the emulated device: eagerly and compiled, with the CPU's results."""

from __future__ import annotations

import warnings

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron_emulator")


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _relative_bias(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx) * 0.01


@pytest.fixture
def inputs():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(1, 2, 128, 16, generator=g) for _ in range(3)]


@pytest.fixture
def cpu_reference(inputs):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "flex_attention called without torch.compile()"
        mask = create_block_mask(_causal, 1, 1, 128, 128, device="cpu")
        return flex_attention(*inputs, block_mask=mask, score_mod=_relative_bias)


def test_eager_flex_attention_is_the_cpus_and_differentiable(inputs, cpu_reference):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = (t.to("neuron").requires_grad_() for t in inputs)
    mask = create_block_mask(_causal, 1, 1, 128, 128, device="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = flex_attention(q, k, v, block_mask=mask, score_mod=_relative_bias)
    assert out.device == torch.device("neuron", 0)
    assert torch.equal(out.detach().cpu(), cpu_reference)
    out.sum().backward()
    assert all(t.grad is not None and t.grad.device.type == "neuron" for t in (q, k, v))


def test_other_devices_keep_torchs_device_check():
    from torch.nn.attention.flex_attention import _validate_device

    meta = torch.empty(1, 1, 4, 4, device="meta")
    with pytest.raises(ValueError, match="FlexAttention is only supported on"):
        _validate_device(meta, meta, meta)


@pytest.mark.slow
def test_compiled_flex_attention_goes_through_the_neuron_backend(inputs, cpu_reference):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = (t.to("neuron") for t in inputs)
    mask = create_block_mask(_causal, 1, 1, 128, 128, device="neuron")
    compiled = torch.compile(flex_attention, backend="neuron")
    out = compiled(q, k, v, block_mask=mask, score_mod=_relative_bias)
    assert out.device.type == "neuron"
    assert torch.equal(out.cpu(), cpu_reference)
