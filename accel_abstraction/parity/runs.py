"""One run of a parity check: the record :mod:`.runner` fills and every verdict reads.

Apart from the runner so that comparing, reporting, plotting and loading a recording need
the record only, not the process machinery.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BackendRun", "run_label"]


@dataclass
class BackendRun:
    """One run of the script on one backend."""

    label: str  # unique in a parity run: "cpu", or "cpu#2" when a backend is given twice
    backend: str
    env: dict[str, str] = field(default_factory=dict)  # the variables changed for this run
    returncode: int | None = None
    error: str = ""  # why the run did not produce usable metrics ("" when it did)
    wall_time: float = 0.0
    records: list[dict[str, Any]] = field(default_factory=list)  # one per logged step: {"step": i, ...}
    facts: dict[str, Any] = field(default_factory=dict)  # {"run": ...} of the metrics file (accel.metrics)
    settings: dict[str, Any] = field(default_factory=dict)  # what the script declared (accel.log_settings)
    metrics_path: str = ""
    log_path: str = ""
    redirect_report: str = ""  # the `accel run` JSON report of a --redirect leg
    recorded_from: str = ""  # a run loaded from a recorded parity.json (not run now): that file
    group: str = ""  # the backend's label ("cpu", "cpu#2"): the runs of one backend over seeds share it
    seed_index: int = 0  # k of --seeds (0: the script's own seeds)
    fingerprints_path: str = ""  # where this run wrote its fingerprints ("" when it recorded none)
    fingerprints: list[dict[str, Any]] = field(default_factory=list)  # read back (or from a recording)

    def __post_init__(self) -> None:
        self.group = self.group or self.label

    @property
    def ok(self) -> bool:
        return not self.error

    def series(self, key: str) -> dict[int, float]:
        """``{step: value}`` of the numeric metric ``key`` (the last record wins for a repeated step)."""
        return {int(r["step"]): float(r[key]) for r in self.records if isinstance(r.get(key), (int, float))}



def run_label(group: str, seed_index: int) -> str:
    """``cpu`` for run 0, ``cpu/seed3`` for run 3 of ``--seeds``."""
    return group if seed_index == 0 else f"{group}/seed{seed_index}"
