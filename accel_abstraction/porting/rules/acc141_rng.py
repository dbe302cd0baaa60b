"""ACC141: torch.cuda RNG call."""

from __future__ import annotations

from ..apis import RAISES, call, kept
from .base import Rule

RULE = Rule(
    "ACC141",
    "rng",
    "torch.cuda RNG call",
    "accel.manual_seed / manual_seed_all / get_rng_state / set_rng_state",
    portable=True,
    apis=(
        kept("torch.cuda.manual_seed", "accel.manual_seed", "None"),
        kept("torch.cuda.manual_seed_all", "accel.manual_seed_all", "None"),
        kept("torch.cuda.random.manual_seed", "accel.manual_seed", "None"),
        kept("torch.cuda.random.manual_seed_all", "accel.manual_seed_all", "None"),
        kept("torch.cuda.seed", "accel.seed", "None"),
        kept("torch.cuda.seed_all", "accel.seed", "None", "accel.seed() seeds every device of the backend"),
        call("torch.cuda.initial_seed", "accel.initial_seed", RAISES),
        call("torch.cuda.get_rng_state", "accel.get_rng_state", RAISES),
        kept("torch.cuda.set_rng_state", "accel.set_rng_state", "None"),
        kept("torch.cuda.get_rng_state_all", "accel.get_rng_state_all", "[]"),
        kept("torch.cuda.set_rng_state_all", "accel.set_rng_state_all", "None"),
        # the same functions through their defining module (``torch.cuda.random.get_rng_state()``)
        call("torch.cuda.random.get_rng_state", "accel.get_rng_state", RAISES),
        kept("torch.cuda.random.set_rng_state", "accel.set_rng_state", "None"),
        kept("torch.cuda.random.get_rng_state_all", "accel.get_rng_state_all", "[]"),
        kept("torch.cuda.random.set_rng_state_all", "accel.set_rng_state_all", "None"),
    ),
    examples=(
        (
            "torch.cuda.manual_seed_all(0)",
            "if accel.is_accelerator_available():",
        ),
    ),
)
