"""Every ``torch.cuda`` function ``accel run`` redirects has its own row in the porting table.

The redirect (:data:`accel_abstraction.redirect.cuda_module.ROWS`) and ``accel port``
(:data:`accel_abstraction.porting.mapping.TABLE`) each list ``torch.cuda`` functions; a name
the redirect serves must have an exact row there (a replacement, or a manual "needs a
person" entry), not only the generic ``torch.cuda`` prefix row, so the report's "port to"
hint and the port say something specific about it.

Where both serve a name they must agree on what serves it (the hot binding is the port's
replacement) and on the no-CUDA answer (the redirect's neutral value is the value the port keeps
where no accelerator is). They differ by design in one place: ``accel run`` takes the selected
backend for the CUDA device (``torch.cuda.is_available()`` is true on cpu, so
``max_memory_allocated()`` answers the backend's statistic, the process RSS on cpu), while
``accel port`` keeps what the program did where it ran before (on a machine without CUDA, 0).
"""

from __future__ import annotations

import ast

import pytest
import torch

from accel_abstraction.porting.mapping import lookup
from accel_abstraction.redirect.cuda_module import NO_NEUTRAL, ROWS

#: Classes and context managers the redirect serves outside ROWS (cuda_module_redirects).
EXTRA = ("Stream", "Event", "device")


@pytest.mark.parametrize("name", [row.name for row in ROWS] + list(EXTRA))
def test_every_redirected_name_has_its_own_port_row(name: str) -> None:
    api = f"torch.cuda.{name}"
    row = lookup(api)
    assert row is not None and row.api == api, f"{api} is redirected but has no row of its own in the porting table"


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
    this torch's ``torch.cuda`` itself answers without CUDA."""
    neutral = row.neutral() if callable(row.neutral) else row.neutral
    kept = ast.literal_eval(_port(row.name).cpu_value)
    assert neutral == kept, f"torch.cuda.{row.name}: redirect neutral {neutral!r}, port keeps {kept!r}"
    if not torch.cuda.is_available():
        assert getattr(torch.cuda, row.name)() == kept
