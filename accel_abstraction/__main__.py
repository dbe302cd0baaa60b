"""``python -m accel_abstraction``: the ``accel`` command."""

import sys

from .cli import main

sys.exit(main())
