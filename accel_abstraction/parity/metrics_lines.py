"""Reading a run's metrics as they come: the metrics file's JSON lines, or the script's output.

:class:`Follower` hands out the complete lines appended to a file since its last call;
:func:`take_json_lines` sorts a metrics file's lines into a :class:`~.runs.BackendRun`,
:func:`take_output_lines` does the same for lines matched by a ``--metric`` pattern, and
:func:`record_problem` is the one rule by which a step record (from a metrics file or a
recorded reference) is judged comparable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .pattern import MetricPattern
from .runs import BackendRun

__all__ = ["Follower", "record_problem", "take_json_lines", "take_output_lines"]


class Follower:
    """Reads the complete lines appended to a file since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = ""
        #: Why the file could not be read (the script replaced it by a folder, ...); ``""``: it could.
        self.problem = ""

    def lines(self, final: bool = False) -> list[str]:
        try:
            with self.path.open("r", encoding="utf-8", errors="replace") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
                self.offset = fh.tell()
        except FileNotFoundError:
            return []
        except OSError as exc:  # a folder or a FIFO where the file should be: said once, not raised
            what = "a folder" if self.path.is_dir() else (exc.strerror or str(exc))
            self.problem = self.problem or f"{self.path} could not be read ({what}; did the script replace it?)"
            return []
        lines = (self.partial + chunk).split("\n")
        self.partial = "" if final else lines.pop()  # an unfinished last line waits for the next read
        return [line for line in lines if line.strip()]


def take_json_lines(run: BackendRun, lines: Sequence[str], keep_steps: bool) -> list[dict[str, Any]]:
    """Sort the metrics file's lines into ``run``: facts, settings and (if ``keep_steps``) step records."""
    new = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:  # not JSON, or an integer of more digits than Python converts
            run.error = run.error or f"unreadable line in {run.metrics_path}: {line[:80]!r}"
            continue
        except RecursionError:
            run.error = run.error or f"a line of {run.metrics_path} nests JSON too deeply to read: {line[:40]!r}..."
            continue
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("run"), dict):
            run.facts.update(record["run"])
        elif isinstance(record.get("settings"), dict):
            run.settings.update(record["settings"])
        elif keep_steps and "step" in record:
            problem = record_problem(record)
            if problem:
                run.error = run.error or f"a record of {run.metrics_path} {problem}"
                continue
            new.append(record)
    return new


def record_problem(record: Mapping[str, Any]) -> str:
    """Why one step record cannot be compared, or ``""``: its step is not a whole number
    (``Infinity``, ``"x"``, ``true``), or a value is neither a number, text nor null, or is
    an integer too large for a float (``log_metric(loss=10**400)``). Metrics files and
    recorded references are judged by this one rule."""
    step = record.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        return f"has step {_short(step)}, not a whole number"
    for key, value in record.items():
        if key == "step" or value is None or isinstance(value, (str, bool)):
            continue
        if not isinstance(value, (int, float)):
            return f"has {key} {_short(value)} at step {step}, not a number"
        if isinstance(value, int):
            try:
                float(value)
            except OverflowError:
                return f"has {key} at step {step}, an integer too large for a float"
    return ""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def take_output_lines(run: BackendRun, lines: Sequence[str], pattern: MetricPattern) -> list[dict[str, Any]]:
    new = []
    for record in pattern.records("\n".join(lines)):
        if "error" in record:
            run.error = run.error or f"--metric: {record['error']}"
        else:
            new.append(record)
    return new
