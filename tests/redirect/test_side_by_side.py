"""``accel run`` and ``accel port`` give the same answer for every redirected ``torch.cuda`` function.

For each row of the redirect (:data:`accel_abstraction.redirect.cuda_rows.ROWS`) whose port
row has a replacement, the ``torch.cuda`` call is made under the redirect (what ``accel run``
serves) and the port's replacement (``accel.<name>``, the same arguments) is called on the
same backend, from the same state: the cpu backend and the emulated neuron device. Both must
give the same answer (value, error, and the state a program sees afterwards: the device's
random stream, the current device), or what the row's declared exception says instead: the
answer of another backend method (``answers``: ``is_available``), or its neutral value where
the port's call raises for a missing feature (``noop``).

In-process (the emulated device is selected in this process, as ``accel.using`` does); the
neuron half needs the emulator's C++ core (``TORCH_EXTENSIONS_DIR``, built once).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="calls torch.cuda and accel functions")

import accel_abstraction as accel  # noqa: E402
from accel_abstraction.errors import CapabilityError  # noqa: E402
from accel_abstraction.interface import Backend  # noqa: E402
from accel_abstraction.redirect import redirect_cuda  # noqa: E402
from accel_abstraction.redirect.cuda_rows import ROWS, CudaRow  # noqa: E402

if torch.cuda.is_available():  # pragma: no cover - the CI machines have no GPU
    pytest.skip("compares the redirect with the port where CUDA is not", allow_module_level=True)

PORTABLE = [row for row in ROWS if row.port.portable]

#: Arguments each call is made with, built on the selected backend after the state is reset
#: (default: one call without arguments; rows taking a device also with the index 0). A pair
#: ``(torch's, accel's)`` where torch.cuda takes an argument the accel function has not.
ARGS: dict[str, Callable[[], list[Any]]] = {
    "set_device": lambda: [(0,)],
    "manual_seed": lambda: [(7,)],
    "manual_seed_all": lambda: [(7,)],
    "set_rng_state": lambda: [(_seeded(5)[0],), (_seeded(5)[0], 0)],
    "set_rng_state_all": lambda: [(_seeded(5),)],
    "stream": lambda: [(None,)],
    "is_bf16_supported": lambda: [(), _Pair((True,), ()), _Pair((False,), ())],
}


class _Pair(tuple):  # type: ignore[type-arg]
    """Different arguments for the torch.cuda call and for the accel call."""

    def __new__(cls, torch_args: tuple[Any, ...], accel_args: tuple[Any, ...]) -> _Pair:
        return super().__new__(cls, (torch_args, accel_args))

def _seeded(seed: int) -> list[Any]:
    """The device generators' states after seeding with ``seed`` (the calls reset the state before they run)."""
    accel.manual_seed_all(seed)
    return accel.get_rng_state_all()


#: Rows whose answer is a fresh random seed: compared by what a program sees of it.
SEEDING = frozenset({"seed", "seed_all"})
#: Memory statistics on the cpu backend are the process's RSS, which moves between two calls.
RSS_SLACK = 16 << 20


def _args(row: CudaRow) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """(torch.cuda's arguments, the replacement's) of each call to compare."""
    make = ARGS.get(row.name)
    calls = make() if make is not None else [(), (0,)] if "(device)" in row.serve.text else [()]
    return [tuple(c) if isinstance(c, _Pair) else (c, c) for c in calls]  # type: ignore[misc]


def _observe(name: str, value: Any) -> Any:
    """What a program sees of a returned value (objects by behaviour, not identity)."""
    if name in SEEDING:
        return ("a seed", isinstance(value, int), accel.initial_seed() == value or value is None)
    if isinstance(value, torch.Tensor):
        return ("tensor", value.tolist())
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_observe(name, v) for v in value]
    if hasattr(value, "__enter__"):
        with value:
            return ("context", type(value).__name__)
    if value is not None and not isinstance(value, (bool, int, float, str, dict)):
        return ("object", type(value).__name__)
    return value


def _reset() -> None:
    accel.set_device(0)
    accel.manual_seed_all(123)


def _outcome(name: str, call: Callable[[], Any]) -> tuple[Any, ...]:
    """(answer or error, the device's next random draw, the current device) after ``call``."""
    _reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            answer = _observe(name, call())
        except CapabilityError as exc:  # the redirect's RedirectCapabilityError is one
            answer = ("raises CapabilityError", exc.feature)
        except Exception as exc:  # noqa: BLE001 - the error type is what is compared
            answer = ("raises", type(exc).__name__)
    draw = None if name in SEEDING else torch.randn(4, device=accel.device()).tolist()
    return answer, draw, accel.current_device()


def _close(a: Any, b: Any) -> bool:
    """Equal, numbers of memory statistics within :data:`RSS_SLACK` (dicts: the same keys)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys()
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        return abs(a - b) <= RSS_SLACK
    return bool(a == b)


@pytest.fixture(scope="module", params=["cpu", "neuron"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with pytest.MonkeyPatch.context() as mp:
        if request.param == "neuron":
            mp.setenv("ACCEL_NEURON_EMULATE", "1")
        with accel.using(request.param) as b:
            yield b
            _reset()


def _same(row: CudaRow, redirected: tuple[Any, ...], ported: tuple[Any, ...]) -> bool:
    if row.category == "memory":
        return _close(redirected, ported)
    return redirected == ported


@pytest.mark.parametrize("row", PORTABLE, ids=[row.name for row in PORTABLE])
def test_accel_run_answers_what_the_port_writes(row: CudaRow, backend: Backend) -> None:
    replacement = getattr(accel, row.port.replacement.removeprefix("accel."))  # type: ignore[union-attr]
    for args, accel_args in _args(row):
        with redirect_cuda():
            redirected = _outcome(row.name, lambda a=args: getattr(torch.cuda, row.name)(*a))
        ported = _outcome(row.name, lambda a=accel_args: replacement(*a))
        where = f"torch.cuda.{row.name}{args!r:.40} on {backend.name}"
        if row.answers:  # declared: accel run answers another backend method
            declared = _outcome(row.name, lambda a=accel_args: getattr(backend, row.answers)(*a))
            assert redirected == declared, f"{where}: accel run {redirected}, backend.{row.answers} {declared}"
        elif row.noop and isinstance(ported[0], tuple) and ported[0][0] == "raises CapabilityError":
            # declared: a backend without the feature has nothing to do
            neutral = row.neutral() if callable(row.neutral) else row.neutral
            assert redirected[0] == neutral, f"{where}: accel run {redirected}, its neutral value {neutral!r}"
        else:
            assert _same(row, redirected, ported), f"{where}: accel run {redirected}, accel port's {row.port.replacement} {ported}"


def test_every_row_is_called() -> None:
    assert set(ARGS) <= {row.name for row in PORTABLE}, "ARGS names a row the redirect does not serve"
    assert len(PORTABLE) >= 25
