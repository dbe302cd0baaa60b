"""The porting rules: one file per rule, and the built-in ones offered through the plugin hook.

Every file ``accNNN_*.py`` in this package defines one built-in rule, ``RULE`` (a
:class:`~.base.Rule`: code, message, the CUDA APIs it reports with their replacement and
meaning on the cpu backend, its fix, its examples and counterexamples).  Adding a built-in
rule is adding such a file; the docs tables (``docs/porting.md``), the API table
(:mod:`accel_abstraction.porting.mapping`) and the example tests follow from it.

The built-in rules reach ``accel scan`` / ``accel port`` as a plugin's do: this module
implements the ``accel_scan_rules(register)`` hook, and :func:`accel_abstraction.porting.runner.load_rules`
registers it with the plugin host (not through an entry point, so ``ACCEL_PLUGINS`` cannot
remove it) and collects every plugin's rules, the built-in ones first.  A plugin adds a
rule the same way::

    from accel_abstraction import hookimpl
    from accel_abstraction.porting.rules import Rule

    @hookimpl
    def accel_scan_rules(register):
        register(Rule("XYZ001", "manual", "uses mylib's CUDA kernels", names=("mylib.cuda",)))
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from ...hookspecs import hookimpl
from .base import CATEGORIES, Match, MatchContext, Matcher, Rule, Visit

__all__ = [
    "BUILTIN_PLUGIN_NAME",
    "BUILTIN_RULES",
    "CATEGORIES",
    "RULES_BY_CODE",
    "VISITS",
    "Match",
    "MatchContext",
    "Matcher",
    "Rule",
    "accel_scan_rules",
]

#: The name the built-in rules are registered under with the plugin host.
BUILTIN_PLUGIN_NAME = "accel-builtin-rules"


def _builtin_rules() -> tuple[Rule, ...]:
    """``RULE`` of every ``accNNN_*`` module of this package, by code."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("acc") and info.name[3:6].isdigit():
            found.append(importlib.import_module(f"{__name__}.{info.name}").RULE)
    return tuple(sorted(found, key=lambda rule: rule.code))


#: Every built-in rule, by code; the docs show them in this order.
BUILTIN_RULES: tuple[Rule, ...] = _builtin_rules()
RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in BUILTIN_RULES}
#: Shape (``"method:cuda"``, ``"string"``, ...) -> the checks the built-in rules declare for it, by code:
#: the scanner's dispatch table (``Rule.visits``).
VISITS: dict[str, tuple[Visit, ...]] = {}
for _rule in BUILTIN_RULES:
    for _key, _check in _rule.visits.items():
        VISITS[_key] = (*VISITS.get(_key, ()), _check)


@hookimpl
def accel_scan_rules(register: Callable[[Rule], None]) -> None:
    """The built-in rules."""
    for rule in BUILTIN_RULES:
        register(rule)
