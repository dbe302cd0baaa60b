"""``python -m accel_abstraction.patching ACTION``: the ``accel patches`` commands without the ``accel`` script."""

import sys

from .cli import main

sys.exit(main())
