"""Porting tools: ``accel scan`` finds CUDA coupling, ``accel port`` rewrites it.

This package is the one place in accel-abstraction that knows about CUDA: its rules
exist to find it.  Modules, one job each:

- :mod:`.mapping`: the mapping table, CUDA API -> portable replacement (drives scanner,
  codemod, the redirect's hints and the docs table).
- :mod:`.rules`: the :class:`Rule` type and the built-in rule table (codes, categories).
- :mod:`.aliases`: import resolution (``import torch.cuda as tc``).
- :mod:`.scanner`: the :mod:`ast` analysis of one file.
- :mod:`.findings`: plain-data results.
- :mod:`.codemod`: libcst rewriting of one file.
- :mod:`.settings`: ``[tool.accel.scan]`` selection.
- :mod:`.runner`: files, plugins, process pool, progress.
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
