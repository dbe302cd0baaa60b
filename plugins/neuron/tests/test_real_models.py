"""Widely used architectures train on the emulated neuron device exactly as on the CPU.

Tiny configurations, built from a config only (Hugging Face ``transformers``, no download:
``HF_HUB_OFFLINE=1``) or a few lines of PyTorch, trained 3 AdamW steps on the CPU and on
neuron (selected through accel, as a user does), compared bit for bit: every parameter and
buffer and every loss. Each model is built on the CPU from the same seed and moved with
``.to(device)``; dropout is off (the device has its own random stream, as CUDA does).

What each model exercises: GPT-2 tied embeddings; Llama RMSNorm, rotary embeddings, SDPA,
grouped-query attention; BERT a masked-LM head tied to the embeddings; Mixtral mixture-of-experts
routing with grouped_mm experts (int32 ``torch.histc`` on the device, as on CUDA); ResNet BatchNorm
running statistics; ViT patch embedding (conv) and attention; a lazy model parameters
materialized on the device; the LSTM/GRU language models (word_language_model's shape,
tied decoder) ATen's RNN path; a ``torch.compile``'d model (within 1e-5 of CPU eager); and
a model on ``neuron:1``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import accel_abstraction as accel

# the conformance tier (conftest.py at the repository root; docs/testing.md)
pytestmark = pytest.mark.conformance

transformers = pytest.importorskip("transformers")

VOCAB = 64
STEPS = 3

Batch = dict[str, torch.Tensor]


@pytest.fixture(scope="module", autouse=True)
def offline() -> None:
    """Config-only models: nothing may be fetched."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    transformers.logging.set_verbosity_error()


# ----------------------------------------------------------------------------- batches


def lm_batch(g: torch.Generator) -> Batch:
    ids = torch.randint(0, VOCAB, (2, 12), generator=g)
    return {"input_ids": ids, "labels": ids}


def mlm_batch(g: torch.Generator) -> Batch:
    ids = torch.randint(0, VOCAB, (2, 12), generator=g)
    labels = ids.clone()
    labels[:, ::2] = -100  # only every other token is predicted
    return {"input_ids": ids, "labels": labels}


def image_batch(g: torch.Generator) -> Batch:
    return {
        "pixel_values": torch.randn(2, 3, 16, 16, generator=g),
        "labels": torch.randint(0, 4, (2,), generator=g),
    }


def seq_batch(g: torch.Generator) -> Batch:
    return {"ids": torch.randint(0, VOCAB, (10, 2), generator=g)}  # (time, batch) like word_language_model


# ----------------------------------------------------------------------------- models


def hf(name: str) -> Callable[[], nn.Module]:
    t = transformers
    dense = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
    no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    configs: dict[str, Callable[[], nn.Module]] = {
        "gpt2": lambda: t.GPT2LMHeadModel(
            t.GPT2Config(
                vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
            )
        ),
        "llama": lambda: t.LlamaForCausalLM(
            t.LlamaConfig(
                vocab_size=VOCAB, max_position_embeddings=32, num_key_value_heads=2,
                attn_implementation="sdpa", **dense,
            )
        ),
        "bert": lambda: t.BertForMaskedLM(
            t.BertConfig(vocab_size=VOCAB, max_position_embeddings=32, **dense, **no_dropout)
        ),
        "vit": lambda: t.ViTForImageClassification(
            t.ViTConfig(image_size=16, patch_size=4, num_channels=3, num_labels=4, **dense, **no_dropout)
        ),
        # grouped_mm experts: on any device but the CPU transformers routes with torch.histc on int32
        "mixtral": lambda: t.MixtralForCausalLM(
            t.MixtralConfig(
                vocab_size=VOCAB, max_position_embeddings=32, num_key_value_heads=2, num_local_experts=4,
                num_experts_per_tok=2, experts_implementation="grouped_mm", **dense,
            )
        ),
        "resnet": lambda: t.ResNetForImageClassification(
            t.ResNetConfig(
                num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                layer_type="basic", num_labels=4,
            )
        ),
    }  # fmt: skip
    return configs[name]


class RNNLanguageModel(nn.Module):
    """PyTorch's word_language_model: embedding, 2-layer LSTM/GRU, decoder tied to the embedding."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.encoder = nn.Embedding(VOCAB, 16)
        self.rnn = getattr(nn, kind)(16, 16, num_layers=2)
        self.decoder = nn.Linear(16, VOCAB)
        self.decoder.weight = self.encoder.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.encoder(ids[:-1]))
        return F.cross_entropy(self.decoder(out).flatten(0, 1), ids[1:].flatten())


class LazyConvNet(nn.Module):
    """No input sizes given: LazyConv2d, LazyBatchNorm2d and LazyLinear materialize on the first batch."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.LazyConv2d(8, 3), nn.LazyBatchNorm2d(), nn.ReLU(), nn.Flatten(), nn.LazyLinear(4)
        )

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.body(pixel_values), labels)


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(48, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 4))

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.net(pixel_values.flatten(1)[:, :48]), labels)


def _loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    out = model(**batch)
    return out if isinstance(out, torch.Tensor) else out.loss


# ----------------------------------------------------------------------------- training


def train(
    build: Callable[[], nn.Module],
    batches: Callable[[torch.Generator], Batch],
    device: torch.device | str,
    compile_backend: str | None = None,
) -> dict[str, torch.Tensor]:
    """``STEPS`` AdamW steps of a model built on the CPU and moved to ``device``; results on the CPU."""
    torch.manual_seed(0)
    model = build().to(device)
    model.train()
    data = torch.Generator().manual_seed(1)
    first = {k: v.to(device) for k, v in batches(data).items()}
    if any(isinstance(p, nn.UninitializedParameter) for p in model.parameters()):
        if torch.device(device).type != "cpu":  # materialize from the CPU's random stream
            torch.get_device_module(device).set_rng_state(torch.get_rng_state())
        with torch.no_grad():
            _loss(model, first)
    step_model = torch.compile(model, backend=compile_backend) if compile_backend else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for i in range(STEPS):
        batch = first if i == 0 else {k: v.to(device) for k, v in batches(data).items()}
        loss = _loss(step_model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    out = {name: t.detach().cpu() for name, t in model.state_dict().items()}
    out["losses"] = torch.stack(losses).cpu()
    out["parameter_count"] = torch.tensor(sum(p.numel() for p in model.parameters()))
    expected = torch.device(device)
    devices = {(t.device.type, t.device.index or 0) for t in (*model.parameters(), *model.buffers())}
    assert devices == {(expected.type, expected.index or 0)}, devices
    return out


def assert_same(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], atol: float = 0.0) -> None:
    assert got.keys() == want.keys()
    for name, value in want.items():
        if atol == 0.0 or not value.is_floating_point():
            assert torch.equal(got[name], value), f"{name}: max diff {_max_diff(got[name], value)}"
        else:
            torch.testing.assert_close(got[name], value, rtol=0, atol=atol, msg=name)


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[torch.Generator], Batch]]] = {
    "gpt2": (hf("gpt2"), lm_batch),
    "llama": (hf("llama"), lm_batch),
    "bert-mlm": (hf("bert"), mlm_batch),
    "mixtral-moe": (hf("mixtral"), lm_batch),
    "resnet": (hf("resnet"), image_batch),
    "vit": (hf("vit"), image_batch),
    "lazy": (LazyConvNet, image_batch),
    "lstm-lm": (lambda: RNNLanguageModel("LSTM"), seq_batch),
    "gru-lm": (lambda: RNNLanguageModel("GRU"), seq_batch),
}


@pytest.mark.parametrize(("build", "batches"), list(MODELS.values()), ids=list(MODELS))
def test_trains_bitwise_like_the_cpu(build, batches, neuron_selected: torch.device) -> None:  # type: ignore[no-untyped-def]
    cpu = train(build, batches, "cpu")
    dev = train(build, batches, neuron_selected)
    assert int(dev["parameter_count"]) == int(cpu["parameter_count"])  # tied weights stayed tied
    assert_same(dev, cpu)


def test_compiled_model_trains_within_1e_5_of_cpu_eager(neuron_selected: torch.device) -> None:
    backend = accel.capabilities().compile_backend
    assert backend is not None, "the selected backend names no torch.compile backend"
    cpu = train(MLP, image_batch, "cpu")
    dev = train(MLP, image_batch, neuron_selected, compile_backend=backend)
    assert_same(dev, cpu, atol=1e-5)


def test_gpt2_on_the_second_device_trains_bitwise_like_the_cpu(neuron_selected: torch.device) -> None:
    cpu = train(hf("gpt2"), lm_batch, "cpu")
    dev = train(hf("gpt2"), lm_batch, torch.device("neuron", 1))
    assert_same(dev, cpu)


def test_a_parameter_held_across_to_gets_its_gradient(neuron_selected: torch.device) -> None:
    """transformers' ``test_enable_input_require_grads_with_gradient_checkpointing`` shape: the
    embedding ``Parameter`` taken on the CPU is the one that trains after ``model.to(device)``
    (it skipped itself on neuron while ``.to()`` made new Parameter objects; CUDA keeps them)."""
    torch.manual_seed(0)
    model = hf("gpt2")()
    model.gradient_checkpointing_enable()
    model.enable_input_require_grads()
    embedding = model.get_input_embeddings().weight
    model.to(neuron_selected)
    model.train()
    batch = lm_batch(torch.Generator().manual_seed(0))
    _loss(model, {k: v.to(neuron_selected) for k, v in batch.items()}).backward()
    assert model.get_input_embeddings().weight is embedding
    assert embedding.grad is not None and embedding.grad.device.type == "neuron"
