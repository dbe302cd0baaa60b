"""Labels for runs over a list of backend names, where a name may repeat."""

from __future__ import annotations

from collections.abc import Sequence


def unique_labels(names: Sequence[str]) -> list[str]:
    """One label per name; a backend named twice is run twice (``cpu``, ``cpu#2``): a determinism check."""
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return labels
