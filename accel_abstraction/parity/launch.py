"""One run of ``accel parity`` that needs more than ``python SCRIPT``: ``python -m accel_abstraction.parity.launch SCRIPT [args]``.

Before running SCRIPT as ``__main__`` (as ``python SCRIPT`` would: ``sys.argv``, ``sys.path[0]``),
:func:`prepare` reads what :mod:`.runner` put in the run's environment:

* ``ACCEL_PARITY_SEED_INDEX=k`` (:mod:`.seeding`): run ``k`` of ``--seeds``, its seeds derived;
* ``ACCEL_PARITY_FINGERPRINTS=FILE`` and ``ACCEL_PARITY_FINGERPRINT_STEPS`` (:mod:`.fingerprint`):
  fingerprint every module's outputs and gradients, and every ATen op inside the modules,
  at those steps (``--locate``, and ``--record`` with ``--locate``).

Run 0 without fingerprints never comes here: it is ``python SCRIPT``, as before. A
``--redirect`` leg (:mod:`.leg`) calls :func:`prepare` too, before the redirect starts.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Mapping, Sequence

from ..environment import read
from .seeding import ENV_VAR as SEED_ENV

__all__ = ["main", "prepare"]


def prepare(environ: Mapping[str, str] | None = None) -> None:
    """Install what this run's environment asks for (seed derivation, fingerprints)."""
    from ..errors import ConfigError
    from . import fingerprint, seeding

    env = os.environ if environ is None else environ
    raw = read(SEED_ENV, env) or "0"
    if not raw.isdigit():
        raise ConfigError(f"{SEED_ENV}={raw!r} is not a run index (a whole number >= 0; accel parity sets it)")
    seeding.install(int(raw))
    fingerprint.install_from_env(env)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print("usage: python -m accel_abstraction.parity.launch SCRIPT [args]", file=sys.stderr)
        return 2
    prepare()
    script = argv[0]
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
