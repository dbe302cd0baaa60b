"""A port must not change what a program does on the machine it ran on: a CPU without CUDA.

For every portable row of the mapping table, the original CUDA call runs here (torch's CPU
build: no CUDA) and the ported call runs with the cpu backend; results, errors and the
process state a program can observe afterwards (the CPU RNG stream, deterministic mode,
autocast inside the returned context) are compared as the row's ``on_cpu`` column says.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from accel_abstraction.porting import port_source
from accel_abstraction.porting.mapping import GUARDED, RAISES, TABLE, ApiMapping

torch = pytest.importorskip("torch", reason="runs the original and the ported call")

if torch.cuda.is_available():  # pragma: no cover - the CI machines have no GPU
    pytest.skip("compares with CUDA calls on a machine without CUDA", allow_module_level=True)

import accel_abstraction as accel  # noqa: E402

#: Arguments each row is called with (a row added to the table needs an entry here).
ARGS: dict[str, str] = {
    "torch.cuda.set_device": "0",
    "torch.cuda.manual_seed": "7",
    "torch.cuda.manual_seed_all": "7",
    "torch.cuda.random.manual_seed": "7",
    "torch.cuda.random.manual_seed_all": "7",
    "torch.cuda.set_rng_state": "torch.Generator().manual_seed(5).get_state()",
    "torch.cuda.set_rng_state_all": "[torch.Generator().manual_seed(5).get_state()]",
    "torch.cuda.amp.GradScaler": "enabled=True",
    "torch.cuda.amp.grad_scaler.GradScaler": "enabled=True",
    "torch.cuda.stream": "torch.cuda.Stream()",
}

PORTABLE = [r for r in TABLE if r.portable]


def _snippet(row: ApiMapping) -> str:
    if row.kind == "flag":
        return f"import torch\n{row.api} = True\nvalue = None\n"
    return f"import torch\nvalue = {row.api}({ARGS.get(row.api, '')})\n"


def _observe(value: Any) -> Any:
    """What a program can see of a returned value (objects compared by behaviour, not identity)."""
    if isinstance(value, torch.autocast):
        with value:
            return ("autocast", torch.is_autocast_enabled("cpu"), (torch.ones(2, 2) @ torch.ones(2, 2)).dtype)
    if isinstance(value, torch.amp.GradScaler):
        return ("scaler", value.is_enabled(), float(value.scale(torch.tensor(1.0))))
    if isinstance(value, torch.Tensor):
        return ("tensor", value.tolist())
    if isinstance(value, list):
        return [_observe(v) for v in value]
    if isinstance(value, dict):
        return dict(value)
    return value


def _run(source: str) -> tuple[Any, ...]:
    """Execute ``source``; return (result seen, error type, CPU RNG draw, deterministic mode)."""
    torch.manual_seed(123)
    torch.use_deterministic_algorithms(False)
    namespace: dict[str, Any] = {}
    error = result = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(source, "<snippet>", "exec"), namespace)
            result = _observe(namespace["value"])
        except Exception as exc:  # noqa: BLE001 - the error type is what is compared
            error = type(exc).__name__
    state = (result, error, torch.rand(3).tolist(), torch.are_deterministic_algorithms_enabled())
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.deterministic = torch.backends.cudnn.benchmark = False
    return state


@pytest.fixture(autouse=True)
def _cpu_backend():  # type: ignore[no-untyped-def]
    with accel.using("cpu"):
        yield


def test_every_row_is_called_with_arguments_it_accepts() -> None:
    unknown = set(ARGS) - {r.api for r in PORTABLE}
    assert not unknown, f"ARGS names rows the table does not have: {unknown}"


@pytest.mark.parametrize("row", PORTABLE, ids=[r.api for r in PORTABLE])
def test_ported_call_means_on_the_cpu_backend_what_the_cuda_call_meant_without_cuda(row: ApiMapping) -> None:
    source = _snippet(row)
    ported = port_source(source)
    assert ported.changed and not ported.manual, (source, ported.manual)
    before = _run(source)
    after = _run(ported.output)
    if row.on_cpu == RAISES:
        # no program that ran on a CPU reached this call; the port may run there
        assert before[1] is not None, f"{row.api} does not raise without CUDA: its on_cpu column is wrong ({before})"
        assert after[2:] == before[2:] or after[1] is not None, (ported.output, before, after)
        return
    assert after == before, f"{row.api} ({row.on_cpu}) changed its meaning on cpu:\n{ported.output}\n{before}\n{after}"
    if row.on_cpu == GUARDED:
        assert "accel.is_accelerator_available()" in ported.output


@pytest.mark.parametrize("row", [r for r in PORTABLE if r.on_cpu == GUARDED and r.kind == "call"], ids=lambda r: r.api)
def test_guarded_rows_still_call_the_backend_where_there_is_an_accelerator(row: ApiMapping) -> None:
    # same port, the predicate answering True: the accel call itself runs (on cpu, standing in for a device)
    ported = port_source(_snippet(row)).output.replace("accel.is_accelerator_available()", "True")
    called = _run(ported)
    assert called[1] is None, ported
