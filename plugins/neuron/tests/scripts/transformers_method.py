"""Run one of transformers' common model-test methods, verbatim, on tiny config-only models of many families.

transformers' model tests are mixins (``ModelTesterMixin`` in ``tests/test_modeling_common.py``)
that each model family's test file instantiates with its own tester. Where no test tree can be
had (GitHub unreachable, a clone of the repository is 1.3 GB), one method of the mixin can still
be run as transformers wrote it: its text, copied by hand from the code index into the
git-ignored ``.cache/`` and checked against ``transformers_method_sources.txt`` (repository,
commit, path, characters, SHA-256), is compiled here and bound to a small harness that plays the
mixin's part for each family: ``model_tester`` (``is_training``,
``prepare_config_and_inputs_for_common``), ``all_model_classes`` and ``_prepare_for_class``.
The harness is this project's; the test's logic and assertions are transformers'.

    python plugins/neuron/tests/scripts/transformers_method.py .cache/transformers-method/METHOD.py
    ACCEL_BACKEND=neuron ACCEL_NEURON_EMULATE=1 python .../transformers_method.py ... --device neuron

prints one line per family (``passed``, ``skipped: reason`` or ``failed: message``) and a
summary; ``--json OUT`` writes the same. Exit status 0 when nothing failed, 1 otherwise, 2 on
a usage error (an excerpt that is not the recorded one among them).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
import textwrap
import unittest
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "transformers_method_sources.txt"
BATCH, SEQ, VOCAB = 2, 7, 99


def read_rows(path: Path = SOURCES) -> dict[str, dict[str, str]]:
    """The recorded methods, by name: ``method`` rows (tab-separated: name, repository, commit,
    path, characters, SHA-256 of the method's text as it stands in the file, indentation included)."""
    rows: dict[str, dict[str, str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 7 or fields[0] != "method":
            raise SystemExit(
                f"{path}:{number}: expected 'method<TAB>name<TAB>repo<TAB>commit<TAB>path<TAB>chars<TAB>sha256'"
            )
        _, name, repo, commit, source, chars, sha = fields
        rows[name] = {"repo": repo, "commit": commit, "path": source, "chars": chars, "sha256": sha}
    return rows


def load_method(excerpt: Path, rows: dict[str, dict[str, str]] | None = None) -> tuple[str, str]:
    """The method's name and text from ``excerpt``, refused unless it is a recorded row to the byte."""
    rows = read_rows() if rows is None else rows
    data = excerpt.read_bytes()
    name = excerpt.stem
    row = rows.get(name)
    if row is None:
        raise SystemExit(
            f"{excerpt}: no 'method' row named {name!r} in {SOURCES.name} (recorded: {sorted(rows)})"
        )
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != int(row["chars"]) or digest != row["sha256"]:
        raise SystemExit(
            f"{excerpt}: {len(data)} bytes, SHA-256 {digest}; the recorded copy of {row['path']} at "
            f"{row['commit'][:12]} is {row['chars']} bytes, {row['sha256']}: copy it again from the code index"
        )
    return name, data.decode("utf-8")


def compile_method(text: str, name: str, torch_device: str) -> Callable[..., None]:
    """``text`` (a method at class indentation) as a function whose globals are what transformers'
    test module gives it: ``copy``, ``torch``, ``set_seed`` and ``torch_device``."""
    import torch
    from transformers import set_seed

    namespace: dict[str, Any] = {
        "copy": copy,
        "torch": torch,
        "set_seed": set_seed,
        "torch_device": torch_device,
    }
    exec(compile(textwrap.dedent(text), f"<transformers {name}>", "exec"), namespace)  # noqa: S102 - a checked excerpt
    method = namespace[name]
    assert callable(method)
    return method  # type: ignore[no-any-return]


def families() -> dict[str, tuple[Callable[[], Any], tuple[str, ...], bool]]:
    """Family -> (tiny config, model classes, encoder-decoder), all from the installed transformers."""
    import transformers as t

    dense = {
        "hidden_size": 32,
        "num_attention_heads": 4,
        "intermediate_size": 48,
    }  # grouped_mm (MoE experts) wants 16-byte strides
    decoder = {
        "vocab_size": VOCAB,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
        **dense,
    }
    moe = {**decoder, "num_local_experts": 4, "num_experts_per_tok": 2}
    seq2seq = {"vocab_size": VOCAB, "d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
               "decoder_attention_heads": 4, "encoder_ffn_dim": 37, "decoder_ffn_dim": 37, "max_position_embeddings": 64,
               "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2}  # fmt: skip
    return {
        "gpt2": (lambda: t.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64),
                 ("GPT2LMHeadModel", "GPT2Model"), False),
        "llama": (lambda: t.LlamaConfig(**decoder), ("LlamaForCausalLM", "LlamaModel"), False),
        "mistral": (lambda: t.MistralConfig(**decoder), ("MistralForCausalLM",), False),
        "qwen2": (lambda: t.Qwen2Config(**decoder), ("Qwen2ForCausalLM",), False),
        "mixtral": (lambda: t.MixtralConfig(**moe), ("MixtralForCausalLM",), False),
        "qwen2_moe": (lambda: t.Qwen2MoeConfig(**decoder, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                                               shared_expert_intermediate_size=16), ("Qwen2MoeForCausalLM",), False),
        "bert": (lambda: t.BertConfig(vocab_size=VOCAB, num_hidden_layers=2, max_position_embeddings=64, **dense),
                 ("BertForMaskedLM", "BertModel"), False),
        "roberta": (lambda: t.RobertaConfig(vocab_size=VOCAB, num_hidden_layers=2, max_position_embeddings=64, **dense),
                    ("RobertaForMaskedLM",), False),
        "t5": (lambda: t.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                                  decoder_start_token_id=0), ("T5ForConditionalGeneration",), True),
        "bart": (lambda: t.BartConfig(**seq2seq), ("BartForConditionalGeneration",), True),
    }  # fmt: skip


def harness(method: Callable[..., None], family: str, torch_device: str) -> type[unittest.TestCase]:
    """A TestCase playing ``ModelTesterMixin``'s part for ``family`` around ``method``."""
    import torch
    import transformers

    make_config, class_names, encoder_decoder = families()[family]

    def prepare() -> tuple[Any, dict[str, torch.Tensor]]:
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=g)
        return make_config(), {"input_ids": ids, "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}

    def prepare_for_class(self: unittest.TestCase, inputs: dict[str, torch.Tensor], model_class: type,
                          return_labels: bool = False) -> dict[str, torch.Tensor]:  # fmt: skip
        out = dict(inputs)
        heads = ("LMHead", "ForCausalLM", "ForMaskedLM", "ForConditionalGeneration")
        if encoder_decoder and not any(h in model_class.__name__ for h in heads):
            out["decoder_input_ids"] = inputs["input_ids"]
        if return_labels and any(h in model_class.__name__ for h in heads):
            out["labels"] = inputs["input_ids"].clone()
        return {k: v.to(torch_device) for k, v in out.items()}

    attrs = {
        "model_tester": SimpleNamespace(is_training=True, prepare_config_and_inputs_for_common=prepare),
        "all_model_classes": tuple(getattr(transformers, n) for n in class_names),
        "_prepare_for_class": prepare_for_class,
        method.__name__: method,
    }
    return type(f"{family}_{method.__name__}", (unittest.TestCase,), attrs)


def run(excerpt: Path, torch_device: str, wanted: list[str] | None = None) -> list[dict[str, str]]:
    """Each family's outcome: ``{"family", "outcome", "detail"}``."""
    import transformers

    transformers.logging.set_verbosity_error()
    name, text = load_method(excerpt)
    method = compile_method(text, name, torch_device)
    results = []
    for family in wanted or list(families()):
        result = unittest.TestResult()
        harness(method, family, torch_device)(name).run(result)
        if result.errors or result.failures:
            outcome, detail = "failed", (result.errors or result.failures)[0][1].strip().splitlines()[-1]
        elif result.skipped:
            outcome, detail = "skipped", result.skipped[0][1]
        else:
            outcome, detail = "passed", ""
        results.append({"family": family, "outcome": outcome, "detail": detail})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "excerpt", type=Path, help="the method's text, copied from the code index (.cache/...)"
    )
    parser.add_argument("--device", default="cpu", help="transformers' torch_device (cpu, neuron, ...)")
    parser.add_argument(
        "--family", action="append", choices=sorted(families()), help="only these (repeatable)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    results = run(args.excerpt, args.device, args.family)
    for r in results:
        print(
            f"{args.device:8} {r['family']:10} {r['outcome']}" + (f": {r['detail']}" if r["detail"] else "")
        )
    counts = {k: sum(r["outcome"] == k for r in results) for k in ("passed", "skipped", "failed")}
    print(f"{args.device}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    if args.json:
        args.json.write_text(
            json.dumps({"device": args.device, "results": results}, indent=1) + "\n", encoding="utf-8"
        )
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
