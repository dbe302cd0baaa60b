"""The redirect's ``torch.cuda`` rows are derived from the porting table's, and agree with them.

The redirect's rows (:data:`accel_abstraction.redirect.cuda_rows.ROWS`) are derived from
``accel port``'s (:data:`accel_abstraction.porting.mapping.TABLE`): every ``torch.cuda``
function the port has a replacement for is redirected, and a name the redirect serves has an
exact row there (a replacement, or a manual "needs a person" entry), not only the generic
``torch.cuda`` prefix row, so the report's "port to" hint and the port say something
specific about it. Anything else is a declared exception with its reason
(:data:`~accel_abstraction.redirect.cuda_rows.EXCEPTIONS`). ``test_side_by_side.py`` calls
every row both ways.

Both agree on what serves a name (the hot binding is the port's replacement) and on the
no-CUDA answer (the redirect's neutral value is the value the port keeps where no
accelerator is). They differ by design in one place: ``accel run`` takes the selected
backend for the CUDA device (``torch.cuda.is_available()`` is true on cpu, so
``max_memory_allocated()`` answers the backend's statistic, the process RSS on cpu), while
``accel port`` keeps what the program did where it ran before (on a machine without CUDA, 0).
"""

from __future__ import annotations

import ast
import dataclasses

import pytest
import torch

from accel_abstraction.porting.apis import RAISES, call
from accel_abstraction.porting.mapping import TABLE, lookup
from accel_abstraction.redirect import cuda_rows
from accel_abstraction.redirect.cuda_module import NO_NEUTRAL, ROWS
from accel_abstraction.redirect.cuda_rows import CLASSES, CONTEXTS, EXCEPTIONS, PREFIX

#: Classes and context managers the redirect serves outside ROWS (cuda_module_redirects).
EXTRA = (*CLASSES, *CONTEXTS)


@pytest.mark.parametrize("name", [row.name for row in ROWS] + list(EXTRA))
def test_every_redirected_name_has_its_own_port_row(name: str) -> None:
    api = f"torch.cuda.{name}"
    row = lookup(api)
    assert row is not None and row.api == api, f"{api} is redirected but has no row of its own in the porting table"


def test_every_portable_torch_cuda_row_is_redirected() -> None:
    portable = {
        r.api.removeprefix(PREFIX) for r in TABLE
        if r.api.startswith(PREFIX) and "." not in r.api.removeprefix(PREFIX) and r.portable
    }  # fmt: skip
    assert portable - {row.name for row in ROWS} - set(CLASSES) == set()


def test_every_exception_says_why_and_only_exceptions_differ() -> None:
    assert all(len(d.reason) > 20 for d in EXCEPTIONS.values())
    assert {row.name for row in ROWS if row.differs} == set(EXCEPTIONS)
    assert {row.name for row in ROWS if not row.port.portable} <= set(EXCEPTIONS), "a manual port row is served by hand"


def test_a_changed_port_row_changes_the_redirect(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows are derived: a port row edited in its rule file is what accel run serves."""
    edited = [
        dataclasses.replace(r, replacement="accel.current_device", cpu_value="7") if r.api == "torch.cuda.device_count" else r
        for r in TABLE
    ] + [dataclasses.replace(call("torch.cuda.my_new_function", "accel.synchronize", RAISES), code="ACC161")]
    monkeypatch.setattr(cuda_rows, "TABLE", tuple(edited))
    rows = {row.name: row for row in cuda_rows._rows()}
    assert rows["device_count"].serve.text == "backend.current_device()" and rows["device_count"].neutral == 7
    assert rows["my_new_function"].fast == "synchronize" and rows["my_new_function"].category == "execution"
    monkeypatch.setattr(cuda_rows, "TABLE", tuple(r for r in TABLE if r.api != "torch.cuda.is_available"))
    with pytest.raises(TypeError, match="is_available"):
        cuda_rows._rows()  # an exception whose port row went away


def _port(name: str):  # type: ignore[no-untyped-def]
    row = lookup(f"torch.cuda.{name}")
    assert row is not None
    return row


@pytest.mark.parametrize("row", [r for r in ROWS if r.fast], ids=lambda r: r.name)
def test_hot_binding_is_the_port_replacement(row) -> None:  # type: ignore[no-untyped-def]
    """A redirected call without arguments is served by the same accel function the port writes."""
    assert _port(row.name).replacement == f"accel.{row.fast}", (
        f"torch.cuda.{row.name}: accel run serves it with accel.{row.fast}, "
        f"accel port writes {_port(row.name).replacement}"
    )


@pytest.mark.parametrize(
    "row", [r for r in ROWS if r.neutral is not NO_NEUTRAL and _port(r.name).cpu_value is not None], ids=lambda r: r.name
)
def test_neutral_value_is_the_ports_no_cuda_value(row) -> None:  # type: ignore[no-untyped-def]
    """What ``accel run --allow-missing`` answers on a backend without the feature is what the
    port keeps where no accelerator is (the original's answer without CUDA), and both are what
    this torch's ``torch.cuda`` itself answers without CUDA (``tests/porting/test_cpu_meaning.py``
    calls each with its arguments)."""
    neutral = row.neutral() if callable(row.neutral) else row.neutral
    kept_value = ast.literal_eval(_port(row.name).cpu_value)
    assert neutral == kept_value, f"torch.cuda.{row.name}: redirect neutral {neutral!r}, port keeps {kept_value!r}"
    if not torch.cuda.is_available() and row.fast:
        assert getattr(torch.cuda, row.name)() == kept_value
