"""One leg of ``accel parity --redirect``: ``python -m accel_abstraction.parity.leg REPORT [--allow-missing] SCRIPT [args]``.

Runs SCRIPT under the runtime redirect through its public entry (the ``accel run`` command,
:func:`accel_abstraction.redirect.cli.main`) with the redirect's JSON report written to
REPORT (``--allow-missing`` passed on), after writing the run's facts (backend, device name, versions) to the metrics file,
since an unmodified script never calls ``accel.log_metric``. Exits with the script's status.
The run's seed index and fingerprints (``--seeds``, ``--locate``) are installed first
(:func:`.launch.prepare`), so they reach the redirected ``torch.cuda`` calls too.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from ..metrics import write_run_facts
    from ..redirect.cli import main as redirect_main
    from .launch import prepare

    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2:
        print(
            "usage: python -m accel_abstraction.parity.leg REPORT [--allow-missing] SCRIPT [args]",
            file=sys.stderr,
        )
        return 2
    report, rest = argv[0], argv[1:]
    options = ["--report", "none", "--output", report]
    if rest[:1] == ["--allow-missing"]:
        options, rest = [*options, "--allow-missing"], rest[1:]
    prepare()
    write_run_facts()
    return redirect_main([*options, *rest])


if __name__ == "__main__":
    sys.exit(main())
