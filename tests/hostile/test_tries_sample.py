"""A sample of the hostile tries (``tests/hostile/tries.py``): every class, judged as in the full run.

The full run (a few hundred tries; ``python tests/hostile/tries.py``) is reported with the
issue; this sample keeps each class honest in CI.
"""

from __future__ import annotations

import json

import pytest

from .tries import main

SAMPLE = 12


@pytest.mark.slow  # starts interpreters (docs/testing.md)
def test_a_sample_of_the_hostile_tries_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--sample", str(SAMPLE), "--points", "10", "--seed", "27", "--fast"])
    out = capsys.readouterr().out
    counts = json.loads(out.strip().splitlines()[-1])
    assert counts["tries"] == SAMPLE
    assert code == 0, out
