"""The tested torch releases are listed once (``accel_neuron.emulator.compat.TESTED_TORCH``, with a
patch series per release). Every enumeration of releases in the README files and docs/ is checked
against it: each names tested releases only, in order, and one that starts at the oldest tested
release names them all, so adding a release fails here at each file:line still quoting the old list."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted(REPO.glob("plugins/*/README.md")),
    REPO / "patches" / "README.md",
]
RELEASE = r"\d+\.\d+\.\d+"
ENUMERATION = re.compile(rf"{RELEASE}(?:(?:, and |, | and ){RELEASE})+")


def _enumerations() -> list[tuple[str, list[str]]]:
    found = []
    for doc in DOCS:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            for match in ENUMERATION.finditer(line):
                found.append((f"{doc.relative_to(REPO)}:{number}", re.findall(RELEASE, match.group(0))))
    return found


def test_every_quoted_list_of_releases_is_the_tested_list() -> None:
    from accel_neuron.emulator.compat import TESTED_TORCH

    tested = list(TESTED_TORCH)
    found = _enumerations()
    assert found, "no enumeration of torch releases found in the docs; update this test"
    stale = []
    for where, releases in found:
        in_order = [r for r in tested if r in releases] == releases
        whole = releases[0] != tested[0] or releases == tested
        if not (in_order and whole):
            stale.append(f"{where}: quotes {', '.join(releases)}; TESTED_TORCH is {', '.join(tested)}")
    assert not stale, "\n".join(stale)
