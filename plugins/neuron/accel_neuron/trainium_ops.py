"""What AWS documents about ATen operators on Trainium under TorchNeuron: the table ``trainium_ops.tsv``.

One row per operator that the AWS Neuron documentation marks ``CPU_FALLBACK`` (runs on the
host, result copied back) or ``N`` (not supported), each with the page and release it is read
from and whether that page names the operator itself (``row``) or a class it belongs to
(``class``: "quantized operator variants"). The table drives both:

* the run report (``accel run --ops``, through the ``accel_op_support`` hook): the operators a
  run used, those documented here marked;
* the emulator's strict setting (``ACCEL_NEURON_STRICT=1``, :mod:`.emulator.strict`): the
  emulated device refuses these operators, as TorchNeuron refuses ``N`` ones and as Ascend's
  ``TORCH_NPU_FALLBACK_CPU_DISABLE=1`` refuses CPU fallbacks.

An operator not in the table is unknown, never assumed native. Reading it needs no torch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from accel_abstraction.errors import ConfigError
from accel_abstraction.op_usage import OpSupport

__all__ = ["STATUSES", "TABLE", "TrainiumOp", "load", "op_support_rows"]

#: The table: ``plugins/neuron/accel_neuron/trainium_ops.tsv``.
TABLE = Path(__file__).with_name("trainium_ops.tsv")
#: The statuses of the compatibility table that are not native, and what each means for a run.
STATUSES = {
    "CPU_FALLBACK": "runs on the host CPU on Trainium (result copied back): works, slower",
    "N": "not supported on Trainium",
}
_COLUMNS = ("op", "status", "basis", "detail", "source", "release")


@dataclass(frozen=True)
class TrainiumOp:
    """One row of the table, with the file and line it was read from."""

    op: str
    status: str
    basis: str
    detail: str
    source: str
    release: str
    where: str  #: ``path:line``

    def support(self) -> OpSupport:
        """The row as the core's generic :class:`~accel_abstraction.op_usage.OpSupport`."""
        detail = self.detail if self.basis == "row" else f"{self.detail} (documented for the class)"
        return OpSupport(self.op, self.status, detail, self.source, self.release)


def parse(text: str, path: str) -> list[TrainiumOp]:
    """The rows of a table's ``text`` (``path`` names it in errors); :class:`ConfigError` for a bad line."""
    rows: list[TrainiumOp] = []
    seen: dict[str, str] = {}
    header = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        where = f"{path}:{number}"
        if not header:
            if tuple(fields) != _COLUMNS:
                raise ConfigError(f"{where}: the header must be {' '.join(_COLUMNS)} (tab-separated), got {line!r}")
            header = True
            continue
        if len(fields) != len(_COLUMNS) or not all(f.strip() for f in fields):
            raise ConfigError(f"{where}: expected {len(_COLUMNS)} non-empty tab-separated fields, got {line!r}")
        row = TrainiumOp(*(f.strip() for f in fields), where=where)  # type: ignore[call-arg]
        if not row.op.startswith("aten::"):
            raise ConfigError(f"{where}: op must be an ATen operator name such as aten::nonzero, got {row.op!r}")
        if row.status not in STATUSES:
            raise ConfigError(f"{where}: status {row.status!r} is not one of {', '.join(STATUSES)}")
        if row.basis not in ("row", "class"):
            raise ConfigError(f"{where}: basis {row.basis!r} is not 'row' or 'class'")
        if row.op in seen:
            raise ConfigError(f"{where}: {row.op} is listed twice (first at {seen[row.op]}); keep one row")
        seen[row.op] = where
        rows.append(row)
    return rows


@functools.cache
def load() -> tuple[TrainiumOp, ...]:
    """The rows of :data:`TABLE` (read once)."""
    return tuple(parse(TABLE.read_text(encoding="utf-8"), str(TABLE)))


def op_support_rows() -> list[OpSupport]:
    """The table as :class:`~accel_abstraction.op_usage.OpSupport` rows (what ``accel_op_support`` registers)."""
    return [row.support() for row in load()]
