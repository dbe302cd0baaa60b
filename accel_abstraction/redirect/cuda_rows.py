"""The redirect's ``torch.cuda`` rows, derived from the porting table's rows.

``accel port`` and ``accel run`` answer the same question for each ``torch.cuda`` function
(what serves it where CUDA is not), so the answer is written once: the porting table's row
(:data:`accel_abstraction.porting.mapping.TABLE`, written in its rule's file) says the CUDA
name, the accel replacement and the value without CUDA. Each redirected row here is derived
from it:

- what serves it: the backend method the replacement ``accel.<method>`` is bound to, called
  with the same arguments, a ``device`` argument translated to the backend's index
  (:class:`~.devices.DeviceTranslator`), exactly as the port keeps the arguments;
- its hot binding (``fast``): that method, where it can be called without arguments;
- its neutral value (``--allow-missing`` on a backend without the feature): the port's
  no-CUDA value (``cpu_value`` of a guarded row: ``0``, ``{}``, ``None``), what
  ``torch.cuda`` itself answers without CUDA;
- its report category: from its rule's category (:data:`CATEGORY_OF_RULE`).

Where the redirect answers otherwise, the row says so in :data:`EXCEPTIONS`, each with the
reason; nothing else is written by hand. The classes and the context manager ``accel run``
serves outside these rows (:data:`CLASSES`, :data:`CONTEXTS`) have port rows too.
``tests/redirect/test_table_agreement.py`` calls every row both ways, on the cpu backend and
on the emulated neuron device, and checks both give the same answer or the declared one.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import Any, NamedTuple

from ..interface import Backend
from ..porting.apis import GUARDED, ApiMapping
from ..porting.mapping import TABLE
from ..porting.rules import RULES_BY_CODE
from .device_info import capability_of, properties_of
from .devices import CUDA
from .serve import NO_NEUTRAL

__all__ = [
    "CATEGORY_OF_RULE",
    "CLASSES",
    "CONTEXTS",
    "EXCEPTIONS",
    "PREFIX",
    "ROWS",
    "CudaRow",
    "Differs",
    "Serve",
]

PREFIX = "torch.cuda."

Index = Callable[[Any], Any]
"""The server's device translator: a CUDA device argument -> the backend's index."""


class Serve(NamedTuple):
    """How a row is served: ``build(backend, index)`` makes the replacement's implementation
    for the selected backend; ``text`` says it in the docs (``backend.memory_allocated(device)``)."""

    build: Callable[[Backend, Index], Callable[..., Any]]
    text: str


class CudaRow(NamedTuple):
    """One redirected ``torch.cuda`` function, derived from its porting-table row :attr:`port`."""

    name: str
    """``torch.cuda.<name>``."""
    category: str
    """Report category: device, execution, memory, rng, amp."""
    serve: Serve
    port: ApiMapping
    """The porting table's row it is derived from."""
    neutral: Any = NO_NEUTRAL
    """Served under ``--allow-missing`` on a backend without the feature (a callable: called);
    ``NO_NEUTRAL``: none, the call fails with a capability error."""
    fast: str = ""
    """The backend method that serves a call without arguments (its hot binding)."""
    noop: bool = False
    """The neutral value is the right answer without ``--allow-missing`` (emptying a cache the backend does not keep)."""
    neutral_of: Callable[[Backend], Any] | None = None
    """Instead of ``neutral``: the neutral value for the selected backend."""
    differs: str = ""
    """Why the row is not what its port row alone gives (:data:`EXCEPTIONS`); empty: derived."""
    answers: str = ""
    """The backend method whose answer the redirect gives where the port's replacement answers
    otherwise (``is_available``); empty: the same answer as the replacement."""


_KEEP: Any = object()


class Differs(NamedTuple):
    """A declared exception: where ``accel run`` serves a row other than its port row says, and why."""

    reason: str
    serve: Serve | None = None
    category: str = ""
    neutral: Any = _KEEP
    noop: bool = False
    neutral_of: Callable[[Backend], Any] | None = None
    fast: Any = _KEEP
    answers: str = ""


#: Report category of a redirected row, by the category of the rule reporting its port row.
CATEGORY_OF_RULE: dict[str, str] = {
    "cuda-api": "device",
    "sync-streams": "execution",
    "memory": "memory",
    "rng": "rng",
}

#: ``torch.cuda`` classes served by constructing the backend's class (isinstance checks hold), by capability.
CLASSES: dict[str, str] = {"Stream": "streams", "Event": "events"}
#: ``torch.cuda`` context managers served outside the rows (``with torch.cuda.device(i):``).
CONTEXTS: tuple[str, ...] = ("device",)


# --------------------------------------------------------------------------- serving, derived


_REQUIRED: Any = object()


def _parameters(method: str) -> list[tuple[str, Any]]:
    """``(name, default or _REQUIRED)`` of each parameter of ``Backend.<method>`` after ``self``
    (read from the code object: the rows are derived at import, ``inspect.signature`` costs 30x)."""
    fn = getattr(Backend, method)
    code = fn.__code__
    names = code.co_varnames[1 : code.co_argcount]
    defaults = fn.__defaults__ or ()
    first_default = len(names) - len(defaults)
    return [(n, defaults[i - first_default] if i >= first_default else _REQUIRED) for i, n in enumerate(names)]


def _method_serve(method: str) -> Serve:
    """``torch.cuda.<name>(...)`` served as ``backend.<method>(...)``: the same arguments, ``device`` translated."""
    params = _parameters(method)
    names = [name for name, _ in params]
    text = f"backend.{method}({', '.join(names)})"
    if "device" not in names:
        return Serve(lambda b, idx: getattr(b, method), text)  # arguments passed on as they are
    if names != ["device"]:
        raise TypeError(
            f"redirect row for accel.{method}: a device argument among others ({names}) is not derived; "
            "declare how it is served in accel_abstraction/redirect/cuda_rows.py EXCEPTIONS"
        )
    default = params[0][1]
    if default is _REQUIRED:

        def required(b: Backend, idx: Index) -> Callable[..., Any]:
            fn = getattr(b, method)
            return lambda device: fn(idx(device))

        return Serve(required, text)

    def optional(b: Backend, idx: Index) -> Callable[..., Any]:
        fn = getattr(b, method)
        return lambda device=default: fn(idx(device))

    return Serve(optional, text)


def _callable_without_arguments(method: str) -> bool:
    return all(default is not _REQUIRED for _, default in _parameters(method))


def _neutral_of_port(row: ApiMapping) -> Any:
    """The port's no-CUDA value of a guarded row (a fresh copy per call where it is mutable)."""
    if row.on_cpu != GUARDED or row.cpu_value is None:
        return NO_NEUTRAL
    value = ast.literal_eval(row.cpu_value)
    return (lambda: copy.copy(value)) if isinstance(value, (dict, list)) else value


# --------------------------------------------------------------------------- the exceptions, by hand


def _available(b: Backend, idx: Index) -> Callable[..., Any]:
    available = b.is_available()  # fixed while the backend is selected; availability() is not free
    return lambda: available


def _set_rng_state(b: Backend, idx: Index) -> Callable[..., Any]:
    fn = b.set_rng_state
    return lambda new_state, device=CUDA: fn(new_state, idx(device))


def _never_capturing(b: Backend, idx: Index) -> Callable[..., Any]:
    return lambda: False


def _bf16(b: Backend, idx: Index) -> Callable[..., Any]:
    fn, native = b.is_bf16_supported, b.is_bf16_native
    return lambda including_emulation=True: fn() if including_emulation else native()


def _properties(b: Backend, idx: Index) -> Callable[..., Any]:
    return lambda device=None: properties_of(b, idx(device))


def _capability(b: Backend, idx: Index) -> Callable[..., Any]:
    return lambda device=None: capability_of(b)


def _properties_without_memory(b: Backend) -> Callable[[], Any]:
    return lambda: properties_of(b, None, total_memory=0)


_NOTHING_TO_RESET = Differs(
    "with --allow-missing a reset does nothing where the backend keeps no peaks (the port row raises without CUDA: no value kept)",
    neutral=None,
)

#: Rows ``accel run`` serves other than their port row says, each with why (by ``torch.cuda`` name).
EXCEPTIONS: dict[str, Differs] = {
    "is_available": Differs(
        "accel run takes the selected backend for the CUDA device, so the script takes its accelerator path "
        "(which is redirected): true wherever the backend runs, on cpu too; the port keeps the no-CUDA answer",
        Serve(_available, "backend.is_available() at selection"),
        fast="",
        answers="is_available",
    ),
    "is_bf16_supported": Differs(
        "answers torch's including_emulation=False by the backend's is_bf16_native() (the port's accel.is_bf16_supported takes the argument as well)",
        Serve(_bf16, "backend.is_bf16_supported() / is_bf16_native()"),
        category="amp",
    ),
    "set_rng_state": Differs(
        "translates torch's device argument (default 'cuda': the current device) beside the state; the derivation serves one device argument alone",
        Serve(_set_rng_state, "backend.set_rng_state(new_state, device)"),
    ),
    "reset_peak_memory_stats": _NOTHING_TO_RESET,
    "reset_max_memory_allocated": _NOTHING_TO_RESET,
    "empty_cache": Differs(
        "a backend without a cache has nothing to empty: does nothing (reported no-op) even without --allow-missing",
        neutral=None,
        noop=True,
    ),
    # served although the port has no replacement (its rows are manual): real scripts ask them on every step
    "is_current_stream_capturing": Differs(
        "no CUDA graph is captured on another backend (transformers asks on every step); no accel call says so",
        Serve(_never_capturing, "False: no CUDA graph is captured"),
        category="execution",
    ),
    "get_device_properties": Differs(
        "answered from the backend (name, memory, processors) by device_info; no accel call returns CUDA properties",
        Serve(_properties, "device_info.properties_of(backend, device)"),
        neutral_of=_properties_without_memory,
    ),
    "get_device_capability": Differs(
        "a compute capability that makes scripts' `>= 8` checks choose what the backend supports (device_info)",
        Serve(_capability, "device_info.capability_of(backend)"),
    ),
}


# --------------------------------------------------------------------------- the rows


def _method_of(row: ApiMapping) -> str:
    """``accel.<method>`` of a portable row: the backend method its replacement is bound to."""
    method = (row.replacement or "").removeprefix("accel.")
    if not hasattr(Backend, method):
        raise TypeError(
            f"{row.api}: its port row's replacement {row.replacement!r} is not a method of the backend interface, "
            "so accel run cannot serve it; name an accel function bound to a Backend method, or declare the "
            "row in accel_abstraction/redirect/cuda_rows.py EXCEPTIONS"
        )
    return method


def _derive(row: ApiMapping, name: str, differs: Differs | None) -> CudaRow:
    rule = RULES_BY_CODE[row.code]
    category = (differs.category if differs else "") or CATEGORY_OF_RULE.get(rule.category, "")
    if not category:
        raise TypeError(
            f"{row.api}: its rule {rule.code} has category {rule.category!r}, which has no report category; "
            "add it to CATEGORY_OF_RULE in accel_abstraction/redirect/cuda_rows.py"
        )
    declared = differs.serve if differs else None
    if row.portable:
        method = _method_of(row)
        serve = declared or _method_serve(method)
        fast = method if _callable_without_arguments(method) else ""
    elif declared is None:
        raise TypeError(
            f"{row.api}: its port row has no replacement, so a redirect of it is served by hand; "
            "give its EXCEPTIONS entry in accel_abstraction/redirect/cuda_rows.py a serve"
        )
    else:
        serve, fast = declared, ""
    neutral = _neutral_of_port(row)
    if differs is None:
        return CudaRow(name, category, serve, row, neutral, fast)
    return CudaRow(
        name,
        category,
        serve,
        row,
        neutral if differs.neutral is _KEEP else differs.neutral,
        fast if differs.fast is _KEEP else differs.fast,
        differs.noop,
        differs.neutral_of,
        differs.reason,
        differs.answers,
    )


def _rows() -> tuple[CudaRow, ...]:
    """A row for every ``torch.cuda.<name>`` port row with a replacement (bar the classes), and for each exception."""
    out = []
    for row in TABLE:
        name = row.api.removeprefix(PREFIX)
        if not row.api.startswith(PREFIX) or "." in name or name in CLASSES:
            continue
        differs = EXCEPTIONS.get(name)
        if (row.kind == "call" and row.portable) or differs is not None:
            out.append(_derive(row, name, differs))
    missing = set(EXCEPTIONS) - {r.name for r in out}
    if missing:
        raise TypeError(
            f"accel_abstraction/redirect/cuda_rows.py EXCEPTIONS names {sorted(missing)}, which have no torch.cuda "
            "row in the porting table (accel_abstraction/porting/rules/); restore the rows or remove the exceptions"
        )
    return tuple(out)


#: Every redirected ``torch.cuda`` function, in the porting table's order.
ROWS: tuple[CudaRow, ...] = _rows()
