"""``python -m accel_abstraction``: the ``accel`` command."""

from .cli import run

run()
