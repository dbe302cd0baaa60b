"""A plain Hugging Face Trainer script: no accel code. The tests run it with only the environment set.

Usage: python hf_trainer_script.py OUT_DIR [--bf16] [--steps N] [--batch N] [--dropout P]. Prints one
JSON line: the device the model trained on, n_gpu, the logged losses (float hex, exact), the losses of
a second run resumed from the half-way checkpoint (model, optimizer, scheduler and RNG states loaded
back), and the files of that checkpoint. ``--dropout`` (default 0: no device RNG stream in the losses)
makes the losses depend on the device generator, so the resumed losses show whether its state came back.
"""

import argparse
import json
import sys
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int, length: int, vocab: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def _losses(trainer: Trainer) -> list[str]:
    return [float(h["loss"]).hex() for h in trainer.state.log_history if "loss" in h]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4, help="per_device_train_batch_size")
    parser.add_argument("--dropout", type=float, default=0.0)
    args = parser.parse_args()
    def model() -> GPT2LMHeadModel:
        torch.manual_seed(0)
        config = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64, n_positions=16)
        config.resid_pdrop = config.embd_pdrop = config.attn_pdrop = args.dropout
        return GPT2LMHeadModel(config)

    training = TrainingArguments(
        output_dir=args.out,
        max_steps=args.steps,
        per_device_train_batch_size=args.batch,
        learning_rate=1e-3,
        logging_steps=1,
        save_steps=args.steps // 2,
        report_to=[],
        bf16=args.bf16,
        dataloader_num_workers=0,
        seed=0,
        disable_tqdm=True,
    )
    trained = model()
    trainer = Trainer(model=trained, args=training, train_dataset=Tokens(32, 16, 64))
    trainer.train()
    device = str(next(trained.parameters()).device)
    resumed = Trainer(model=model(), args=training, train_dataset=Tokens(32, 16, 64))
    resumed.train(resume_from_checkpoint=f"{args.out}/checkpoint-{args.steps // 2}")
    print(json.dumps({
        "device": device,
        "args_device": str(training.device),
        "n_gpu": training.n_gpu,
        "losses": _losses(trainer),
        "resumed_losses": _losses(resumed),
        "tied": trained.lm_head.weight is trained.transformer.wte.weight,
        "checkpoint_files": sorted(p.name for p in Path(f"{args.out}/checkpoint-{args.steps // 2}").iterdir()),
    }))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
