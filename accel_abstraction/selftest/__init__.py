"""``accel test``: the bundled self-test, the first thing to run after installing.

It needs nothing but the installed distributions: :mod:`.tiny_train` (a small MLP trained
for a few steps on generated data, shipped inside the wheel) runs once on ``cpu`` and once
on every other backend this machine can run or emulate (the rule of
:mod:`accel_abstraction.emulation`), each in its own process, exactly as ``accel parity``
runs a script; the per-step losses are compared with the CPU's and a one-line verdict per
backend is printed. Exit 0 when every backend ran and agreed, 1 otherwise.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SCRIPT"]

#: The bundled training script (a plain file next to this one, run as ``python SCRIPT``).
SCRIPT = Path(__file__).with_name("tiny_train.py")
