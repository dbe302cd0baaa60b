"""``python -m accel_abstraction.run script.py [args...]``: the ``accel run`` command (see :mod:`accel_abstraction.redirect`)."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    from accel_abstraction.redirect.cli import main

    sys.exit(main())
