"""``python -m accel_abstraction.redirect script.py ...``: same as ``accel run``."""

import sys

from .cli import main

sys.exit(main())
