"""Porting tools: ``accel scan`` finds CUDA coupling, ``accel port`` rewrites it.

This package is the one place in accel-abstraction that knows about CUDA: its rules
exist to find it.  Modules, one job each:

- :mod:`.rules`: one file per rule (``rules/accNNN_*.py``): what it finds (its CUDA API rows,
  its callees' checks, its matcher), its typed fix, its examples; :mod:`.rules.base` the
  :class:`Rule` type; built-in and plugin rules come through the ``accel_scan_rules`` hook.
- :mod:`.apis` / :mod:`.mapping`: one row of the CUDA API table / the table, gathered from the
  rules (scanner, codemod, the redirect's hints and the docs table read it).
- :mod:`.fixes`, :mod:`.cst_edit`: typed fixes and the libcst pieces they are built from.
- :mod:`.aliases`: import resolution (``import torch.cuda as tc``).
- :mod:`.scanner` (traversal), :mod:`.context` (per-file state), :mod:`.apichecks` (table-driven
  checks), :mod:`.devices` / :mod:`.guards` (values in device positions, ast helpers).
- :mod:`.findings`: plain-data results.
- :mod:`.codemod`: libcst rewriting of one file; :mod:`.imports`: its import edits.
- :mod:`.settings`: ``[tool.accel.scan]`` selection.
- :mod:`.runner`: rules, files, process pool, progress; :mod:`.apply`: porting files on disk.
- :mod:`.report`: text, JSON and SARIF output.
- :mod:`.cli`: the ``scan`` and ``port`` subcommands.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from .codemod import PortResult, port_source
    from .findings import FileResult, Finding
    from .fixes import Fix
    from .rules import BUILTIN_RULES, CATEGORIES, Rule
    from .scanner import scan_source

# Served on first use: the redirect reads only the mapping table, and the codemod needs
# libcst, which only the `port` extra installs (`accel scan` and the pre-commit hook run without it).
__getattr__ = lazy_getattr(
    __name__,
    {
        "PortResult": "codemod",
        "port_source": "codemod",
        "FileResult": "findings",
        "Finding": "findings",
        "Fix": "fixes",
        "BUILTIN_RULES": "rules",
        "CATEGORIES": "rules",
        "Rule": "rules",
        "scan_source": "scanner",
    },
    globals(),
)

__all__ = [
    "BUILTIN_RULES",
    "CATEGORIES",
    "FileResult",
    "Finding",
    "Fix",
    "PortResult",
    "Rule",
    "port_source",
    "scan_source",
]
