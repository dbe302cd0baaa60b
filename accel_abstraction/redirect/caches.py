"""torch's caches of its own function objects, refreshed whenever the redirect installs or undoes.

Some torch modules collect torch functions into a cache the first time they need them:
dynamo's trace rules (which functions go into a graph), ``torch.overrides``' function
tables, the factory list of ``with torch.device(...)``. Built while a redirect is active,
such a cache would hold the replacements and keep them after undo (compiling
``torch.ones`` after undo then fails: dynamo no longer knows the original). So both
transitions clear them, and each is rebuilt lazily from whatever torch holds at the time;
the factory list, which must hold the originals, is filled before patching instead.
Only modules already imported are touched: the redirect imports nothing heavy.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["alias_jit_builtins", "refresh_torch_caches", "unalias_jit_builtins", "warm_torch_caches"]

#: (module, function with ``cache_clear``) pairs.
_CACHED = (
    ("torch.overrides", "get_ignored_functions"),
    ("torch.overrides", "get_default_nowrap_functions"),
    ("torch.overrides", "get_testing_overrides"),
    ("torch.overrides", "_get_overridable_functions"),
    ("torch.overrides", "_get_tensor_methods"),
)


def warm_torch_caches() -> None:
    """Fill, before patching, the caches that must keep the original functions.

    ``with torch.device(d)`` applies ``d`` to a factory call only if the function torch
    dispatches (always the original) is in ``_device_constructors()``; filled with the
    originals, it keeps working under the redirect (whose ``DeviceContext`` translates
    ``"cuda"``) and after it.
    """
    fn = getattr(sys.modules.get("torch.utils._device"), "_device_constructors", None)
    if fn is not None:
        fn()


def refresh_torch_caches() -> None:
    """Clear torch's caches of torch function objects (those of modules already imported)."""
    for module_name, attr in _CACHED:
        fn = getattr(sys.modules.get(module_name), attr, None)
        clear = getattr(fn, "cache_clear", None)
        if clear is not None:
            clear()
    rules = sys.modules.get("torch._dynamo.trace_rules")
    if rules is not None and hasattr(rules, "clear_lru_cache"):
        rules.clear_lru_cache()


def alias_jit_builtins(pairs: Iterable[tuple[Any, Any]]) -> list[int]:
    """Let TorchScript compile a replacement as the aten op of its original; return the ids added.

    ``torch.jit.script`` maps torch functions to aten operators through a table keyed by
    ``id(function)``; a replacement missing from it would be compiled as Python source and
    fail. Scripted code therefore runs the original operator (a ``"cuda"`` device in
    scripted code is not translated).
    """
    builtins = sys.modules.get("torch.jit._builtins")
    if builtins is None:
        return []
    table = builtins._get_builtin_table()
    added = []
    for original, replacement in pairs:
        op = table.get(id(original))
        if op is not None and id(replacement) not in table:
            table[id(replacement)] = op
            added.append(id(replacement))
    return added


def unalias_jit_builtins(ids: Iterable[int]) -> None:
    """Remove the entries :func:`alias_jit_builtins` added."""
    table = getattr(sys.modules.get("torch.jit._builtins"), "_builtin_table", None)
    if table is not None:
        for i in ids:
            table.pop(i, None)
