"""Where two runs part: the first module, and the first ATen op inside it, whose fingerprints differ.

:func:`first_difference` walks the reference run's module outputs and gradients in execution
order (:mod:`.fingerprint`) and returns the first whose counterpart in the other run differs
(shape, dtype; then, bitwise, the exact hash, or with a tolerance, a statistic beyond
``atol + rtol * max|reference tensor|``), with the first differing op recorded inside that module.
:func:`read_entries` reads a fingerprints file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .fingerprint import STATS

__all__ = ["Finding", "entry_difference", "first_difference", "read_entries"]

Entry = dict[str, Any]


@dataclass
class Finding:
    """The first difference found: module (and op), at which step, and what differs."""

    step: int  # the logged step
    position: int  # its position among the run's steps
    kind: str  # "module" (a forward output) or "grad" (the gradient reaching that output)
    module: str
    module_type: str
    call: int
    what: str
    op: str | None = None
    op_seq: int | None = None
    op_what: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def sentence(self) -> str:
        where = "output" if self.kind == "module" else "gradient of its output"
        call = f" (call {self.call + 1})" if self.call else ""
        text = f"step {self.step}: first difference in module {self.module} ({self.module_type}){call}, {where}: {self.what}"
        if self.op is not None:
            same = self.op_what == self.what
            text += f"; first differing op inside it: {self.op} (op #{self.op_seq}{'' if same else ': ' + self.op_what})"
        elif self.kind == "module":
            text += "; no op inside it differs on its own (its inputs already differed?)"
        return text


def read_entries(path: str | Path) -> list[Entry]:
    entries = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a run killed mid-line
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _key(entry: Entry) -> tuple[Any, ...]:
    return (entry.get("pos"), entry.get("kind"), entry.get("module"), entry.get("call"), entry.get("out"), entry.get("seq"))


def _close(a: Any, b: Any, rtol: float, atol: float, scale: float) -> bool:
    if a is None or b is None:
        return a is b
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b
    return abs(a - b) <= atol + rtol * scale


def entry_difference(ref: Entry, other: Entry | None, rtol: float = 0.0, atol: float = 0.0) -> str:
    """What differs between two fingerprints ("" when they agree within the tolerance)."""
    if other is None:
        return "missing in the other run"
    if ref.get("op") != other.get("op"):
        return f"another op ({other.get('op')} where the reference ran {ref.get('op')})"
    for field in ("shape", "dtype"):
        if ref.get(field) != other.get(field):
            return f"{field} {other.get(field)} vs reference {ref.get(field)}"
    if ref.get("hash") == other.get("hash"):
        return ""
    # the tolerance is relative to the tensor's magnitude (a mean near 0 is no smaller a tensor)
    scale = max(abs(ref.get("min") or 0.0), abs(ref.get("max") or 0.0))
    stats = [
        f"{s} {other.get(s)!r} vs {ref.get(s)!r}" for s in STATS if not _close(ref.get(s), other.get(s), rtol, atol, scale)
    ]
    if ref.get("nonfinite") != other.get("nonfinite"):
        stats.insert(0, f"{other.get('nonfinite')} non-finite values vs {ref.get('nonfinite')}")
    if rtol == 0 and atol == 0:
        return "exact hash differs" + (f" ({', '.join(stats)})" if stats else " (statistics equal to print precision)")
    return ", ".join(stats)


def first_difference(
    ref: Sequence[Entry],
    other: Iterable[Entry],
    steps: Sequence[int],
    rtol: float = 0.0,
    atol: float = 0.0,
) -> Finding | None:
    """The first module output or gradient (in the reference's execution order) that differs.

    ``steps[pos]`` is the logged step at position ``pos``.
    """
    index = {_key(e): e for e in other}
    for entry in ref:
        if entry.get("kind") not in ("module", "grad"):
            continue
        what = entry_difference(entry, index.get(_key(entry)), rtol, atol)
        if not what:
            continue
        pos = int(entry["pos"])
        finding = Finding(
            step=steps[pos] if 0 <= pos < len(steps) else pos,
            position=pos,
            kind=str(entry["kind"]),
            module=str(entry["module"]),
            module_type=str(entry.get("type") or _type_of(ref, entry)),
            call=int(entry.get("call") or 0),
            what=what,
        )
        if entry["kind"] == "module":
            _first_op(finding, ref, index, rtol, atol)
        return finding
    return None


def _type_of(ref: Sequence[Entry], entry: Entry) -> str:
    for e in ref:
        if e.get("kind") == "module" and e.get("module") == entry.get("module") and e.get("type"):
            return str(e["type"])
    return "?"


def _first_op(finding: Finding, ref: Sequence[Entry], index: dict[tuple[Any, ...], Entry], rtol: float, atol: float) -> None:
    inside = finding.module + "."
    for entry in ref:
        if entry.get("kind") != "op" or entry.get("pos") != finding.position:
            continue
        module = str(entry.get("module"))
        if module != finding.module and not module.startswith(inside):
            continue
        if module == finding.module and entry.get("call") != finding.call:
            continue
        what = entry_difference(entry, index.get(_key(entry)), rtol, atol)
        if what:
            finding.op, finding.op_seq, finding.op_what = str(entry.get("op")), int(entry.get("seq") or 0), what
            return
