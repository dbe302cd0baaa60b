"""A port renames the callee and keeps the arguments: every keyword a torch API takes, its replacement takes.

``torch.cuda.set_rng_state(new_state=s)`` ported to ``accel.set_rng_state(new_state=s)`` must
run on an accelerator; so must ``torch.cuda.is_bf16_supported(including_emulation=False)``.
This reads both signatures for every ``call`` row of the porting table and fails on a keyword
(or a positional slot) the replacement lacks.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

pytest.importorskip("torch", reason="reads torch.cuda's signatures (the notorch nox leg has no torch)")

import accel_abstraction as accel  # noqa: E402
from accel_abstraction.porting.mapping import TABLE  # noqa: E402


def _resolve(dotted: str) -> Any:
    head, *rest = dotted.split(".")
    obj: Any = importlib.import_module("accel_abstraction" if head == "accel" else head)
    for part in rest:
        obj = getattr(obj, part)
    return obj


def _call_rows() -> list[Any]:
    rows = TABLE.values() if isinstance(TABLE, dict) else TABLE
    return [r for r in rows if r.kind == "call" and r.replacement and r.api.startswith("torch.")]


def _params(fn: Any) -> tuple[list[inspect.Parameter], bool, bool]:
    params = list(inspect.signature(fn).parameters.values())
    return params, any(p.kind is p.VAR_POSITIONAL for p in params), any(p.kind is p.VAR_KEYWORD for p in params)


def test_there_are_call_rows_to_check() -> None:
    assert len(_call_rows()) > 20


@pytest.mark.parametrize("row", _call_rows(), ids=lambda r: r.api)
def test_the_replacement_takes_every_argument_of_the_torch_api(row: Any) -> None:
    try:
        original = _resolve(row.api)
        src, _, _ = _params(original)
    except (AttributeError, ValueError, TypeError):
        pytest.skip(f"{row.api} has no readable signature in this torch")
    dst, var_pos, var_kw = _params(_resolve(row.replacement))
    names = {p.name for p in dst}
    keywords = [p.name for p in src if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    lacking = [] if var_kw else [n for n in keywords if n not in names]
    assert not lacking, f"{row.replacement} takes no {lacking} of {row.api}{inspect.signature(original)}"
    slots = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in src)
    taken = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in dst)
    assert var_pos or taken >= slots, f"{row.replacement} takes {taken} positional arguments, {row.api} {slots}"


def test_torch_argument_names_reach_the_backend() -> None:
    accel.use("cpu")
    state = accel.get_rng_state()
    accel.set_rng_state(new_state=state)
    accel.set_rng_state_all(new_states=accel.get_rng_state_all())
    assert accel.is_bf16_supported(including_emulation=False) == accel.is_bf16_supported()


def test_bf16_without_emulation_asks_the_device_module() -> None:
    from accel_abstraction.interface import Backend

    class EmulatesBf16:
        @staticmethod
        def is_bf16_supported(including_emulation: bool = True) -> bool:
            return including_emulation

    class Old(Backend):
        name = device_type = "cpu"

        @property
        def module(self) -> Any:
            return EmulatesBf16

    backend = Old()
    assert backend.is_bf16_supported() and not backend.is_bf16_native()
