# ruff: noqa
"""Reproducibility helpers copied between projects."""
import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)  # expect: ACC141
    torch.cuda.manual_seed_all(seed)  # expect: ACC141
    torch.backends.cudnn.deterministic = True  # expect: ACC181
    torch.backends.cudnn.benchmark = False  # expect: ACC182


def fast_math() -> None:
    torch.backends.cuda.matmul.allow_tf32 = True  # expect: ACC183
    torch.backends.cudnn.allow_tf32 = True  # expect: ACC183
    torch.set_float32_matmul_precision("high")
    torch.backends.cudnn.enabled = True  # expect: ACC189


def checkpoint_rng() -> dict:
    state = {
        "cpu": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(),  # expect: ACC141
    }
    torch.cuda.set_rng_state(state["cuda"])  # expect: ACC141
    all_states = torch.cuda.get_rng_state_all()  # expect: ACC141
    return state


print("cudnn version", torch.backends.cudnn.version())  # expect: ACC189
