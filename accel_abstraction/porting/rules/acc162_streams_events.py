"""ACC162: CUDA streams and events."""

from __future__ import annotations

from ..apis import RAISES, call, manual
from .base import Rule

RULE = Rule(
    "ACC162",
    "sync-streams",
    "CUDA streams and events",
    "accel.Stream / accel.Event / accel.current_stream() / accel.stream(s)",
    portable=True,
    apis=(
        call("torch.cuda.Stream", "accel.Stream", RAISES),
        call("torch.cuda.Event", "accel.Event", RAISES),
        call("torch.cuda.current_stream", "accel.current_stream", RAISES),
        call(
            "torch.cuda.stream",
            "accel.stream",
            RAISES,
            hint="a stream made by torch.cuda.Stream cannot exist without CUDA",
        ),
        manual("torch.cuda.default_stream", "no public accel equivalent"),
        manual("torch.cuda.set_stream", "use accel.stream(s) as a context manager"),
        manual("torch.cuda.StreamContext", "use accel.stream(s)"),
        manual("torch.cuda.ExternalStream", "external CUDA streams are CUDA-only"),
    ),
    examples=(
        ("e = torch.cuda.Event(enable_timing=True)", "e = accel.Event(enable_timing=True)"),
        # the annotation is a type, not a call: it stays (accel.Event is a function, not a type)
        ("e: torch.cuda.Event = torch.cuda.Event(enable_timing=True)", "e: torch.cuda.Event = accel.Event(enable_timing=True)"),
    ),
    counterexamples=(
        # type annotations only (nanotron's logging/timers.py); the events are made elsewhere
        "from typing import Optional\nstart: Optional[torch.cuda.Event] = None",
        "def elapsed(start: torch.cuda.Event, s: 'x' = None) -> torch.cuda.Stream:\n    return start",
    ),
)
