"""Timeouts for work that runs in other processes, scaled by how loaded the machine is.

A fixed timeout that holds on an idle machine fails on a loaded one: a 2-core CI runner with a
load average of 6 runs a child process about three times slower. :func:`scaled` stretches a
timeout by the machine's load per CPU (never shrinks it), so a test's limit still catches a hang
without failing a slow but working run. Used by :func:`accel_abstraction.testing.assert_backends_match`
and by the project's own subprocess tests.
"""

from __future__ import annotations

import os

__all__ = ["MAX_FACTOR", "load_factor", "scaled"]

#: The most a timeout is stretched: a hang is still caught on a machine 4x over its CPUs.
MAX_FACTOR = 4.0


def load_factor() -> float:
    """The 1-minute load average per CPU, between 1 and :data:`MAX_FACTOR` (1 where the OS has no load average)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        return 1.0
    cpus = os.cpu_count() or 1
    return min(MAX_FACTOR, max(1.0, load / cpus))


def scaled(seconds: float) -> float:
    """``seconds`` stretched by :func:`load_factor`, read now (call it when the wait starts)."""
    return seconds * load_factor()
