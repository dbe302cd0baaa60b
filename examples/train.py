"""Train a small GPT-style character model, on whichever accelerator is configured.

The script is written against ``accel_abstraction`` only: nothing in it names a device.
One configuration line picks the hardware::

    python examples/train.py                                         # the configured backend (auto)
    ACCEL_BACKEND=cpu python examples/train.py
    ACCEL_BACKEND=neuron ACCEL_NEURON_EMULATE=1 python examples/train.py --amp
    accel parity examples/train.py --backends cpu,neuron             # both, compared step by step
    accel parity examples/train.py --backends cpu,neuron --rtol 1e-2 -- --amp   # bf16: within tolerance

The model: token and position embeddings, two pre-LayerNorm transformer blocks (causal
self-attention and an MLP, each followed by dropout), a linear head; AdamW. The text is
generated from a small grammar (no download), so the loss has somewhere to go: it falls from
about ln(vocabulary) to well under half of that within the default 80 steps.

Every step is logged with ``accel.log_metric(step=i, loss=..., step_time=...)``: written to
``$ACCEL_METRICS_FILE`` when set (``accel parity`` sets it), a no-op otherwise; the settings
a recorded reference must share (seed, steps, AMP dtype, ...) with ``accel.log_settings``.

Step times are measured with one intra-op thread by default (``--threads``): at this size more
threads do not help, and on a shared machine they make timings swing by an order of magnitude.

Reproducibility across backends: parameters are initialised on the CPU and batches are drawn
from a CPU generator, so every backend starts from the same weights and sees the same data.
Dropout draws from the device's own generator; where that generator has the CPU generator's
state format (CPU, the emulated neuron device) it is given the CPU generator's state, so the
dropout masks are the same too and float32 runs can agree bit for bit.
"""

from __future__ import annotations

import argparse
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import accel_abstraction as accel

# --------------------------------------------------------------------------- data


_SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "the robot", "a small bird", "the teacher"]
_VERBS = ["sees", "likes", "follows", "paints", "finds", "carries", "watches"]
_OBJECTS = ["the red ball", "a green tree", "the river", "an apple", "the moon", "a tiny boat", "the garden"]
_ENDINGS = [".", " today.", " at night.", " again.", " slowly."]


def make_corpus(n_sentences: int = 2000, seed: int = 1234) -> str:
    """Sentences from a tiny grammar: structured enough to learn in a few dozen steps."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_sentences):
        lines.append(
            f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_ENDINGS)}"
        )
    return "\n".join(lines) + "\n"


class CharData:
    """The corpus as a tensor of character ids, with batches drawn from a CPU generator."""

    def __init__(self, text: str, seed: int) -> None:
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.data = torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        self.generator = torch.Generator().manual_seed(seed)

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def batch(self, batch_size: int, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        starts = torch.randint(len(self.data) - block_size - 1, (batch_size,), generator=self.generator)
        x = torch.stack([self.data[s : s + block_size] for s in starts.tolist()])
        y = torch.stack([self.data[s + 1 : s + 1 + block_size] for s in starts.tolist()])
        return x, y

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)


# --------------------------------------------------------------------------- model


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float) -> None:
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        mask = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, block_size, block_size), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        att = self.attn_drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(
        self, vocab_size: int, block_size: int, n_embd: int, n_head: int, n_layer: int, dropout: float
    ) -> None:
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head, block_size, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.size(1)
        pos = torch.arange(t, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        return self.head(self.ln_f(self.blocks(x)))


@torch.no_grad()
def generate(model: TinyGPT, data: CharData, prompt: str, n: int) -> str:
    """Greedy continuation of ``prompt`` (shows what the model learned)."""
    model.eval()
    ids = torch.tensor([[data.stoi[c] for c in prompt]], device=accel.device())
    for _ in range(n):
        logits = model(ids[:, -model.block_size :])
        ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    model.train()
    return data.decode(ids[0].tolist())


# --------------------------------------------------------------------------- training


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=32)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--amp", action="store_true", help="autocast with the backend's AMP dtype (bf16 on cpu and neuron)"
    )
    p.add_argument("--sample", type=int, default=60, help="characters to generate after training (0: none)")
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help=(
            "torch intra-op threads (default 1; 0: torch's default). The model is too small to gain from "
            "more, and with several a busy machine makes step times swing by 10-50x (threads wait on each other)"
        ),
    )
    return p.parse_args(argv)


def align_device_rng() -> bool:
    """Give the device generator the CPU generator's state where both use the same format."""
    cpu_state = torch.get_rng_state()
    if accel.get_rng_state().numel() != cpu_state.numel():
        return False  # e.g. a Philox device generator: it keeps its own (seeded) stream
    accel.set_rng_state(cpu_state)
    return True


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = accel.device()
    accel.manual_seed_all(args.seed)

    data = CharData(make_corpus(), seed=args.seed)
    model = TinyGPT(data.vocab_size, args.block_size, args.n_embd, args.n_head, args.n_layer, args.dropout)
    model.to(dev)  # initialised on the CPU: identical weights on every backend
    align_device_rng()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scaler = accel.GradScaler()  # a real loss scaler where the AMP dtype is float16, a pass-through otherwise
    amp_dtype = accel.backend().default_amp_dtype if args.amp else None
    # declared for `accel parity --reference`: a recording made with other settings is flagged
    accel.log_settings(
        seed=args.seed, steps=args.steps, amp_dtype=amp_dtype, dropout=args.dropout, lr=args.lr
    )
    track_memory = accel.capabilities().memory_stats
    if track_memory:
        accel.reset_peak_memory_stats()

    if not args.quiet:
        params = sum(p.numel() for p in model.parameters())
        print(f"backend {accel.backend().name} on {dev}; {params:,} parameters; amp={args.amp}")
    first_loss = last_loss = float("nan")
    t_start = time.perf_counter()
    for step in range(args.steps):
        x, y = data.batch(args.batch_size, args.block_size)
        t0 = time.perf_counter()
        x, y = x.to(dev), y.to(dev)
        with accel.autocast(enabled=args.amp):
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)).float(), y.view(-1))
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        last_loss = loss.item()  # waits for the device
        accel.synchronize()
        step_time = time.perf_counter() - t0
        if step == 0:
            first_loss = last_loss
        extra = {"max_memory_allocated": accel.max_memory_allocated()} if track_memory else {}
        accel.log_metric(step=step, loss=last_loss, step_time=step_time, **extra)
        if not args.quiet and (step % 10 == 0 or step == args.steps - 1):
            print(f"step {step:4d}  loss {last_loss:.4f}  {step_time * 1e3:7.1f} ms")

    total = time.perf_counter() - t_start
    print(f"loss {first_loss:.4f} -> {last_loss:.4f} in {args.steps} steps ({total:.1f} s)")
    if track_memory:
        print(f"peak memory allocated: {accel.max_memory_allocated() / 2**20:.1f} MiB")
    if args.sample:
        print("sample:", repr(generate(model, data, "the ", args.sample)))


if __name__ == "__main__":
    main()
