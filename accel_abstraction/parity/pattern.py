"""Metrics read from a script's own output: ``accel parity --metric 'iter (?P<step>\\d+): loss (?P<loss>\\S+)'``.

For scripts that do not call ``accel.log_metric`` (an unmodified script from elsewhere):
each line of the run's output (stdout and stderr, split at ``\\n`` and ``\\r`` so progress
bars count too) is searched with the pattern; a match gives one record, ``step`` from the
group ``step`` and one value per other named group. The first metric group is the one
compared (``loss`` above); all are recorded. A group named ``step_time`` (seconds) or
``step_time_ms`` (milliseconds, also recorded as ``step_time`` in seconds) gives the step
times of the table.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["MetricPattern", "looks_like_pattern"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


#: Longest a pattern may search one batch of output lines (seconds).
MATCH_SECONDS = 5.0


class _Expired(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[list[bool]]:
    """Raise :class:`_Expired` in the block after ``seconds`` (the regex engine checks signals
    while it backtracks); a no-op off the main thread or where there is no ``SIGALRM``."""
    expired: list[bool] = []
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield expired
        return

    def alarm(_signum: int, _frame: object) -> None:
        expired.append(True)
        raise _Expired

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield expired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def looks_like_pattern(text: str) -> bool:
    """Whether ``--metric`` was given a regular expression rather than a logged metric's name."""
    return not _NAME.match(text)


@dataclass(frozen=True)
class MetricPattern:
    """A compiled ``--metric`` pattern with a ``step`` group and at least one metric group."""

    regex: re.Pattern[str]
    metrics: tuple[str, ...]  # named groups other than "step", in the order written

    @classmethod
    def parse(cls, text: str, source: str = "--metric") -> MetricPattern:
        try:
            regex = re.compile(text)
        except re.error as exc:
            raise ConfigError(f"{source} {text!r} is not a valid regular expression: {exc}") from None
        groups = sorted(regex.groupindex, key=regex.groupindex.__getitem__)
        metrics = tuple(g for g in groups if g != "step")
        if "step" not in groups or not metrics:
            raise ConfigError(
                f"{source} {text!r} needs a named group 'step' and at least one metric group, e.g. "
                r"'iter (?P<step>\d+): loss (?P<loss>\S+)' (found groups: "
                f"{', '.join(groups) or 'none'})"
            )
        return cls(regex, metrics)

    @property
    def compared(self) -> str:
        """The metric that is compared: the first named group after ``step``."""
        return self.metrics[0]

    def records(self, text: str) -> list[dict[str, Any]]:
        """The records in ``text``; a line whose step or value is not a number is an error record.

        Searching takes at most :data:`MATCH_SECONDS` per call (in the main thread): a pattern
        that backtracks catastrophically raises :class:`ConfigError` instead of hanging.
        """
        with _time_limit(MATCH_SECONDS) as expired:
            try:
                return self._records(text)
            except _Expired:
                pass
        assert expired
        raise ConfigError(
            f"--metric {self.regex.pattern!r} took over {MATCH_SECONDS:g} s to search the output; it "
            "backtracks catastrophically (nested repetition such as (a+)+ or (.*)*): write it without "
            "a repeated group that can match the same text in several ways"
        )

    def _records(self, text: str) -> list[dict[str, Any]]:
        out = []
        for line in re.split(r"[\r\n]", text):
            m = self.regex.search(line)
            if m is None:
                continue
            try:
                record: dict[str, Any] = {"step": int(m.group("step"))}
            except (TypeError, ValueError):
                out.append({"error": f"step {m.group('step')!r} is not an integer in {line.strip()!r}"})
                continue
            for name in self.metrics:
                raw = m.group(name)
                if raw is None:
                    continue
                try:
                    record[name] = float(raw.rstrip(",;"))
                except ValueError:
                    record["error"] = f"{name} {raw!r} is not a number in {line.strip()!r}"
                    continue
                if name == "step_time_ms":
                    record["step_time"] = record[name] / 1000
            out.append(record)
        return out
