"""Recorded runs: ``accel parity --record ref.json`` now, ``--reference ref.json`` later, elsewhere.

A recording is the ``parity.json`` document itself (any run's ``parity.json`` serves): its
schema is :data:`SCHEMA` version :data:`SCHEMA_VERSION`, documented in ``docs/parity.md``.
:func:`load_reference` reads one run of it back as a :class:`~.runner.BackendRun` (the
document's reference run unless another label is asked for), which then stands first in
the comparison like a backend run now would. :func:`settings_mismatches` (before running) and
:func:`run_mismatches` (after) say where the new runs were not set up like the recorded one
(script, arguments, steps, declared settings, versions), so a difference in the numbers can
be read for what it is.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..safe_io import InputFileError, read_regular
from .metrics_lines import record_problem
from .runs import BackendRun

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "Reference",
    "ReferenceFileError",
    "decode_float",
    "encode_float",
    "file_sha256",
    "host_facts",
    "load_reference",
    "run_mismatches",
    "settings_mismatches",
]

SCHEMA = "accel-parity"
SCHEMA_VERSION = 3
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "nan": math.nan, "inf": math.inf, "-inf": -math.inf}  # fmt: skip


class ReferenceFileError(ConfigError):
    """A ``--reference`` file that cannot be used (missing, not JSON, another schema, no such run)."""


def encode_float(value: Any) -> Any:
    """JSON has no NaN or infinity: write them as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def decode_float(value: Any) -> Any:
    """The inverse of :func:`encode_float` (also reads schema 1's ``"nan"``/``"inf"``)."""
    return _NONFINITE.get(value, value) if isinstance(value, str) else value


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def host_facts() -> dict[str, Any]:
    """The machine the runs were made on (no host name): platform, CPU model and count, versions."""
    from .. import __version__

    try:
        import torch

        torch_version: str | None = torch.__version__
    except ImportError:  # the core installs without torch; then no run could have used it
        torch_version = None
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass  # not Linux: platform.processor() stays
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch_version,
        "accel": __version__,
    }


@dataclass
class Reference:
    """A recorded run and the document it came from."""

    path: Path
    document: dict[str, Any]
    run: BackendRun
    sha256: str  # of the file as read
    runs: list[BackendRun] = field(default_factory=list)  # the recorded ensemble (seeds), ``run`` first

    def __post_init__(self) -> None:
        self.runs = self.runs or [self.run]

    @property
    def summary(self) -> str:
        facts, host = self.run.facts, self.document.get("host") or {}
        device = facts.get("device_name") or self.run.backend
        when = self.document.get("created", "an unknown time")
        versions = f"torch {facts.get('torch', host.get('torch', '?'))}"
        seeds = f", {len(self.runs)} runs over seeds" if len(self.runs) > 1 else ""
        return f"{self.run.backend} on {device} ({versions}{seeds}), recorded {when} in {self.path}"


def _fail(path: Path, what: str) -> ReferenceFileError:
    return ReferenceFileError(
        f"--reference {path}: {what}; record one with: accel parity SCRIPT --backends NAME --record {path}"
    )


def load_reference(path: str | Path, label: str | None = None) -> Reference:
    """Read run ``label`` (default: the document's reference run) of a recorded ``parity.json``."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise _fail(path, "no such file")
    if path.is_dir():
        raise _fail(path, "is a folder, not a parity.json file")
    try:
        data = read_regular(path, "--reference", limit=REFERENCE_LIMIT)
        text = data.decode("utf-8")
    except InputFileError as exc:
        raise ReferenceFileError(f"{exc}; record one with: accel parity SCRIPT --backends NAME --record FILE") from None
    except UnicodeDecodeError as exc:
        raise _fail(path, f"cannot be read ({exc})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(path, f"is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise _fail(path, "is JSON nested too deeply to be a parity.json document") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise _fail(path, f"cannot be read as JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise _fail(path, "is not a parity.json document (no 'runs' list)")
    version = doc.get("schema_version")
    if (
        doc.get("schema", SCHEMA) != SCHEMA
        or not isinstance(version, int)
        or not 1 <= version <= SCHEMA_VERSION
    ):
        raise _fail(
            path,
            f"has schema {doc.get('schema', SCHEMA)!r} version {version!r}; this accel reads "
            f"{SCHEMA!r} versions 1..{SCHEMA_VERSION} (a newer accel wrote it? upgrade)",
        )
    runs = [r for r in doc["runs"] if isinstance(r, dict)]
    labels = [str(r.get("label")) for r in runs]
    wanted = label if label is not None else str(doc.get("reference", labels[0] if labels else ""))
    if wanted not in labels:
        raise _fail(path, f"has no run {wanted!r} (runs: {', '.join(labels) or 'none'})")
    metric = doc.get("metric", "loss")
    if not isinstance(metric, str):
        raise _fail(path, f"its 'metric' is {_short(metric)}, not a name")
    raw = runs[labels.index(wanted)]
    group = str(raw.get("group") or wanted)
    members = [r for r in runs if str(r.get("group") or r.get("label")) == group] if label is None else [raw]
    members.sort(key=lambda r: r["seed_index"] if isinstance(r.get("seed_index"), int) else 0)
    loaded = [_load_run(path, r, metric) for r in members]
    run = next(r for r, m in zip(loaded, members, strict=True) if m is raw)
    return Reference(path, doc, run, hashlib.sha256(data).hexdigest(), loaded)


def _load_run(path: Path, raw: dict[str, Any], metric: str) -> BackendRun:
    """One recorded run as a :class:`BackendRun` (label ``<label> (recorded)``)."""
    wanted = str(raw.get("label"))
    if raw.get("error"):
        raise _fail(path, f"its run {wanted!r} failed ({raw['error']}), so it is no reference")
    if isinstance(raw.get("records"), list):
        records = [
            {k: decode_float(v) for k, v in r.items()}
            for r in raw["records"]
            if isinstance(r, dict) and "step" in r
        ]
    else:  # schema 1: the compared metric and step times, by step
        steps, values, times = raw.get("steps", []), raw.get(metric, []), raw.get("step_time", [])
        records = [
            {"step": s, metric: decode_float(v), **({"step_time": t} if t is not None else {})}
            for s, v, t in zip(steps, values, list(times) + [None] * len(steps), strict=False)
        ]
    if not any(metric in r for r in records):
        raise _fail(path, f"its run {wanted!r} has no {metric!r} values")
    problem = _records_problem(records)
    if problem:
        raise _fail(path, f"its run {wanted!r} {problem}")
    tables = {}
    for key in ("env", "facts", "settings"):
        value = raw.get(key) or {}
        if not isinstance(value, dict):
            raise _fail(path, f"its run {wanted!r} has {key} {_short(value)}, not an object")
        tables[key] = value
    returncode = raw.get("returncode")
    if returncode is not None and (not isinstance(returncode, int) or isinstance(returncode, bool)):
        raise _fail(path, f"its run {wanted!r} has returncode {_short(returncode)}, not a whole number")
    seed_index = raw.get("seed_index", 0)
    if not isinstance(seed_index, int) or isinstance(seed_index, bool) or seed_index < 0:
        raise _fail(path, f"its run {wanted!r} has seed_index {_short(seed_index)}, not a whole number >= 0")
    fingerprints = raw.get("fingerprints") or []
    if not isinstance(fingerprints, list) or not all(isinstance(e, dict) for e in fingerprints):
        raise _fail(path, f"its run {wanted!r} has fingerprints that are not a list of objects")
    recorded = str(raw.get("recorded_from") or "")
    group = str(raw.get("group") or wanted)
    return BackendRun(
        wanted if recorded else f"{wanted} (recorded)",
        str(raw.get("backend", wanted)),
        env={str(k): str(v) for k, v in tables["env"].items()},
        returncode=returncode,
        records=records,
        facts=tables["facts"],
        settings=tables["settings"],
        recorded_from=str(path),
        group=group if recorded else f"{group} (recorded)",
        seed_index=seed_index,
        fingerprints=[{k: decode_float(v) for k, v in e.items()} for e in fingerprints],
    )


#: Largest recording read (bytes); a recording of thousands of steps is a few MiB.
REFERENCE_LIMIT = 256 << 20


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _records_problem(records: list[dict[str, Any]]) -> str:
    """Why recorded steps cannot be compared (a step that is not a whole number, a value that
    is not a number), or ``""``."""
    for i, record in enumerate(records):
        step = record["step"]
        if not isinstance(step, int) or isinstance(step, bool):
            return f"has step {_short(step)} in record {i}, not a whole number"
        for key, value in record.items():
            if key != "step" and value is not None and not _number(value):
                return f"has {key} {_short(value)} at step {step}, not a number"
        problem = record_problem(record)  # the metrics files' rule too: an integer too large for a float
        if problem:
            return problem
    return ""


def settings_mismatches(reference: Reference, now: Mapping[str, Any]) -> list[str]:
    """Where this parity run is set up unlike the recorded one, known before running: one sentence each.

    ``now`` holds this run's ``script_sha256``, ``script_args``, ``metric``, ``metric_pattern``
    and ``redirect``. :func:`run_mismatches` adds what the runs themselves show.
    """
    doc = reference.document
    out = []
    for key, what in [
        ("script_sha256", "script hash (the script changed since the recording)"),
        ("script_args", "script arguments"),
        ("metric", "compared metric"),
        ("metric_pattern", "--metric pattern"),
        ("redirect", "--redirect"),
    ]:
        if key in doc and doc[key] != now.get(key):
            a, b = doc[key], now.get(key)
            if key == "script_sha256":
                a, b = f"{str(a)[:12]}...", f"{str(b)[:12]}..."
            elif (
                key == "script_args"
                and isinstance(a, list)
                and isinstance(b, list)
                and len(json.dumps(a + b)) > 60
            ):
                out.append(f"{what}: {_args_diff(a, b)}")  # long lists: what differs, not both in full
                continue
            out.append(f"{what}: reference {_short(a)}, now {_short(b)}")
    return out


def run_mismatches(reference: Reference, runs: Sequence[BackendRun]) -> list[str]:
    """After the runs: steps, declared settings and versions that differ from the recorded run."""
    doc, ref = reference.document, reference.run
    out = []
    metric = str(doc.get("metric", "loss"))
    ref_steps = len(ref.series(metric))
    for run in runs:
        if not run.ok or run.recorded_from:
            continue
        steps = len(run.series(metric))
        if steps != ref_steps:
            out.append(f"{run.label}: {steps} steps, the reference {ref_steps}")
        for key in sorted(set(ref.settings) | set(run.settings)):
            a, b = ref.settings.get(key), run.settings.get(key)
            if a != b:
                out.append(f"{run.label}: declared {key} {_short(b)}, the reference {_short(a)}")
        for key in ("torch", "accel", "default_dtype"):
            a, b = ref.facts.get(key), run.facts.get(key)
            if a is not None and b is not None and a != b:
                out.append(f"{run.label}: {key} {b}, the reference {a}")
    return out


def _args_diff(ref: list[Any], now: list[Any]) -> str:
    gone = [a for a in ref if a not in now]
    new = [a for a in now if a not in ref]
    if not gone and not new:
        return f"the same arguments in another order: reference {json.dumps(ref)}, now {json.dumps(now)}"
    return f"only in the reference {json.dumps(gone)}, only now {json.dumps(new)}"


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:40] + "..." + text[-16:]
