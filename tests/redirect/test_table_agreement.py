"""Every ``torch.cuda`` function ``accel run`` redirects has its own row in the porting table.

The redirect (:data:`accel_abstraction.redirect.cuda_module.ROWS`) and ``accel port``
(:data:`accel_abstraction.porting.mapping.TABLE`) each list ``torch.cuda`` functions; a name
the redirect serves must have an exact row there (a replacement, or a manual "needs a
person" entry), not only the generic ``torch.cuda`` prefix row, so the report's "port to"
hint and the port say something specific about it.
"""

from __future__ import annotations

import pytest

from accel_abstraction.porting.mapping import lookup
from accel_abstraction.redirect.cuda_module import ROWS

#: Classes and context managers the redirect serves outside ROWS (cuda_module_redirects).
EXTRA = ("Stream", "Event", "device")


@pytest.mark.parametrize("name", [row.name for row in ROWS] + list(EXTRA))
def test_every_redirected_name_has_its_own_port_row(name: str) -> None:
    api = f"torch.cuda.{name}"
    row = lookup(api)
    assert row is not None and row.api == api, f"{api} is redirected but has no row of its own in the porting table"
