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
    "torch.cuda.random.set_rng_state": "torch.Generator().manual_seed(5).get_state()",
    "torch.cuda.random.set_rng_state_all": "[torch.Generator().manual_seed(5).get_state()]",
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


# ----------------------------------------------------------------------------- rewrites of shapes, not rows
#
# Each rewrite that is not an API-table row (guards fitted to what they guard, DDP ids,
# device-type tests, is_cuda, integer devices) with what it means on the cpu backend: the
# original runs here without CUDA, the port with the cpu backend, and the difference is put
# in one of the categories the differential check over real code counts separately.
# device_ids and FSDP's device_id (ACC172) need a process group: tests/distributed/test_ddp_device_ids.py and
# tests/porting/test_fsdp_device_id.py run them.

SAME_RESULT = "same"
RAISES_NOW = "returned before, raises now"
RUNS_NOW = "raised before, runs now"
VALUE_CHANGED = "value changed"
MESSAGE_WRONG = "message now wrong"

#: (id, source setting ``value``, what the port may do on cpu). ``RUNS_NOW`` is allowed only
#: where the original raised without CUDA (no CPU program reached it).
SHAPES: list[tuple[str, str, str]] = [
    ("guard around CUDA-only code",
     "value = []\nif torch.cuda.is_available():\n    value.append(torch.cuda.get_device_capability())\nelse:\n    value.append('cpu')\n",
     SAME_RESULT),
    ("negated guard, CUDA-only else",
     "value = []\nif not torch.cuda.is_available():\n    value.append('cpu')\nelse:\n    value.append(torch.cuda.get_device_capability())\n",
     SAME_RESULT),
    ("early return before CUDA-only code",
     "def f():\n    if not torch.cuda.is_available():\n        return 'cpu'\n    return torch.cuda.get_device_capability()\nvalue = f()\n",
     SAME_RESULT),
    # ACC113: a device-type test around CUDA-only code (nanochat's FP8 guard) stays a CUDA-only test
    ("device-type guard around CUDA-only code",
     "device_type = 'cuda' if torch.cuda.is_available() else 'cpu'\nvalue = []\n"
     "if device_type == 'cuda':\n    value.append(torch.cuda.get_device_capability())\nelse:\n    value.append('cpu')\n",
     SAME_RESULT),
    ("negated device-type guard, CUDA-only else",
     "device_type = 'cuda' if torch.cuda.is_available() else 'cpu'\nvalue = []\n"
     "if device_type != 'cuda':\n    value.append('no fp8')\nelse:\n    value.append(torch.cuda.get_device_capability())\n",
     SAME_RESULT),
    ("early return on a device type before CUDA-only code",
     "device_type = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
     "def f():\n    if device_type != 'cuda':\n        return 'cpu'\n    return torch.cuda.get_device_capability()\nvalue = f()\n",
     SAME_RESULT),
    ("guarded seed inside a device-type guard",
     "device_type = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
     "if device_type == 'cuda':\n    torch.cuda.manual_seed(0)\nvalue = torch.rand(2).tolist()\n", SAME_RESULT),
    ("device types listed in an assertion",
     "def f(device_type):\n    assert device_type in ['cuda', 'mps', 'cpu'], 'Invalid device type'\n    return device_type\n"
     "value = [f('cpu'), f('mps'), f('cuda')]\n", SAME_RESULT),
    ("guarded seed inside a list of device types, on mps",
     "def f(device_type):\n    if device_type in ['cuda', 'mps']:\n        torch.cuda.manual_seed(0)\n"
     "f('mps')\nvalue = torch.rand(2).tolist()\n", SAME_RESULT),
    ("a device type the assertion refuses",
     "def f(device_type):\n    assert device_type in ['cuda', 'mps', 'cpu'], 'Invalid device type'\n    return device_type\n"
     "value = f('neuron')\n", SAME_RESULT),
    ("capability in an if-expression",
     "value = torch.cuda.get_device_capability() if torch.cuda.is_available() else 'cpu'\n", SAME_RESULT),
    ("CUDA memory statistic chosen by device type",
     "device_type = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
     "get_max_memory = torch.cuda.max_memory_allocated if device_type == 'cuda' else lambda: 0\nvalue = get_max_memory()\n",
     SAME_RESULT),
    ("guarded seed inside a guard",
     "if torch.cuda.is_available():\n    torch.cuda.manual_seed(0)\nvalue = torch.rand(2).tolist()\n", SAME_RESULT),
    ("seed as a statement",
     "torch.cuda.manual_seed_all(3)\nvalue = torch.rand(2).tolist()\n", SAME_RESULT),
    ("device-type test ==", "x = torch.ones(1)\nvalue = x.device.type == 'cuda'\n", SAME_RESULT),
    ("device-type test on meta", "x = torch.ones(1, device='meta')\nvalue = x.device.type == 'cuda'\n", SAME_RESULT),
    ("startswith on mps", "device = 'mps'\nvalue = device.startswith('cuda')\n", SAME_RESULT),
    ("'cuda' in str(device) on xpu", "device = torch.device('xpu')\nvalue = 'cuda' in str(device)\n", SAME_RESULT),
    ("!= on meta", "device_type = 'meta'\nvalue = device_type != 'cuda'\n", SAME_RESULT),
    ("is_cuda of a meta tensor", "value = torch.ones(1, device='meta').is_cuda\n", SAME_RESULT),
    ("map_location of torch.device(0)",
     "import io\nb = io.BytesIO()\ntorch.save(torch.ones(2), b)\nb.seek(0)\nvalue = torch.load(b, map_location=torch.device(0)).tolist()\n",
     RUNS_NOW),
    # alias imports: the calls are ported through the alias and the dead import goes
    ("from-import alias of device_count",
     "from torch.cuda import device_count as cuda_device_count\nvalue = cuda_device_count()\n", SAME_RESULT),
    ("module alias import torch.cuda as tc",
     "import torch.cuda as tc\ntc.manual_seed_all(1)\nvalue = (tc.is_available(), torch.rand(2).tolist())\n", SAME_RESULT),
    ("cudnn alias flag",
     "from torch.backends import cudnn as cd\ncd.benchmark = False\nvalue = torch.ones(2).sum().item()\n", SAME_RESULT),
    ("unused alias import, dropped at the import",
     "from torch.cuda import synchronize as sync\nvalue = torch.ones(2).sum().item()\n", SAME_RESULT),
    ("autocast alias",
     "from torch.cuda.amp import autocast as ac\nwith ac():\n    value = (torch.ones(2, 2) @ torch.ones(2, 2)).dtype\n", SAME_RESULT),
]


def _outcome(source: str) -> tuple[Any, str | None, str | None]:
    namespace: dict[str, Any] = {}
    torch.manual_seed(123)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(source, "<snippet>", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - compared
            return None, type(exc).__name__, str(exc)
    return namespace.get("value"), None, None


def difference(before: tuple[Any, str | None, str | None], after: tuple[Any, str | None, str | None]) -> str:
    """How the port's outcome differs from the original's, in the differential check's categories."""
    if before == after:
        return SAME_RESULT
    if before[1] is None and after[1] is not None:
        return RAISES_NOW
    if before[1] is not None and after[1] is None:
        return RUNS_NOW
    if before[1] is not None:
        return MESSAGE_WRONG
    return VALUE_CHANGED


def test_difference_puts_each_change_in_its_category() -> None:
    assert difference((1, None, None), (1, None, None)) == SAME_RESULT
    assert difference((1, None, None), (None, "RuntimeError", "x")) == RAISES_NOW
    assert difference((None, "RuntimeError", "x"), (1, None, None)) == RUNS_NOW
    assert difference((1, None, None), (2, None, None)) == VALUE_CHANGED
    assert difference((None, "AssertionError", "CUDA"), (None, "AssertionError", "mps")) == MESSAGE_WRONG


@pytest.mark.parametrize(("source", "allowed"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_ported_shape_means_on_the_cpu_backend_what_it_meant_without_cuda(source: str, allowed: str) -> None:
    ported = port_source("import torch\n" + source)
    assert ported.changed and ported.error is None, ported.error
    before = _outcome("import torch\n" + source)
    after = _outcome(ported.output)
    found = difference(before, after)
    assert found in (SAME_RESULT, allowed), f"{found}:\n{ported.output}\n{before}\n{after}"


def test_the_accelerator_predicate_takes_only_the_selected_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_abstraction import device_tests

    for device in ("cuda", "cuda:0", "cpu", "meta", torch.device("cpu")):
        assert accel.is_accelerator_device(device) is False  # the cpu backend has no accelerator
    monkeypatch.setattr(accel, "is_accelerator_available", lambda: True)
    monkeypatch.setattr(accel, "device_type", lambda: "neuron")
    assert device_tests.is_accelerator_device("neuron:1") and device_tests.is_accelerator_device(torch.device("meta")) is False
    for other in ("cpu", "meta", "mps", "xpu", "cuda", "neuronx", "", None):
        assert device_tests.is_accelerator_device(other) is False, other


#: The guard shapes above around CUDA-only code, and the CUDA-only test each must keep: ACC121's
#: becomes ``accel.device_type() == "cuda"``; ACC113's is kept as it is (``device_type != 'cuda'``).
_ACC121_KEEPS = ('accel.device_type() == "cuda"', 'accel.device_type() != "cuda"')
_ACC113_KEEPS = ("device_type == 'cuda'", "device_type != 'cuda'")
_CUDA_ONLY_GUARDS = [(s[0], s[1], _ACC121_KEEPS) for s in SHAPES[:3]] + [(s[0], s[1], _ACC113_KEEPS) for s in SHAPES[3:6]] + [
    (s[0], s[1], _ACC121_KEEPS if "if-expression" in s[0] else _ACC113_KEEPS)
    for s in SHAPES
    if s[0] in ("capability in an if-expression", "CUDA memory statistic chosen by device type")
]


@pytest.mark.parametrize(("source", "kept"), [g[1:] for g in _CUDA_ONLY_GUARDS], ids=[g[0] for g in _CUDA_ONLY_GUARDS])
def test_a_guard_around_cuda_only_code_stays_closed_on_another_accelerator(
    source: str, kept: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the emulated neuron device: an accelerator that is not CUDA; the block's CUDA-only call
    # would stop there with "Torch not compiled with CUDA enabled"
    before = _outcome("import torch\n" + source)
    ported = port_source("import torch\n" + source).output
    assert any(test in ported for test in kept), ported
    monkeypatch.setattr(accel, "is_accelerator_available", lambda: True)
    monkeypatch.setattr(accel, "device_type", lambda: "neuron")
    assert _outcome(ported) == before, ported


def test_an_asserted_list_of_device_types_admits_the_selected_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    # nanochat's compute_init: what it accepted still passes, and so does the accelerator it is now given
    source = "def f(device_type):\n    assert device_type in ['cuda', 'mps', 'cpu'], 'Invalid device type'\n    return device_type\n"
    ported = port_source("import torch\n" + source).output
    monkeypatch.setattr(accel, "is_accelerator_available", lambda: True)
    monkeypatch.setattr(accel, "device_type", lambda: "neuron")
    assert _outcome(ported + "value = [f('cpu'), f('mps'), f('cuda'), f('neuron')]\n") == (["cpu", "mps", "cuda", "neuron"], None, None)
    assert _outcome(ported + "value = f('xpu')\n")[1] == "AssertionError"
