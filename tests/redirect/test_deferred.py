"""redirect.deferred: redirects for a module not imported yet go in when it is, and come out on undo."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from accel_abstraction.redirect.deferred import Deferred, unwatch, watch
from accel_abstraction.redirect.spec import Redirect


def _item(name: str) -> Deferred:
    return Deferred(name, lambda m: [Redirect(m, "answer", lambda: "redirected", "device")])


def test_installed_when_the_module_is_imported_and_undone(fresh_module: str) -> None:
    owner = watch([_item(fresh_module)])
    assert fresh_module not in sys.modules and not owner.redirects
    module: ModuleType = importlib.import_module(fresh_module)
    assert module.answer() == "redirected" and len(owner.redirects) == 1
    unwatch(owner)
    assert module.answer() == "original" and not owner.redirects


def test_installed_at_once_when_already_imported(fresh_module: str) -> None:
    module = importlib.import_module(fresh_module)
    owner = watch([_item(fresh_module)])
    assert module.answer() == "redirected"
    unwatch(owner)
    assert module.answer() == "original"


def test_undone_before_the_import_installs_nothing_and_leaves_no_finder(fresh_module: str) -> None:
    finders = list(sys.meta_path)
    owner = watch([_item(fresh_module)])
    unwatch(owner)
    assert sys.meta_path == finders
    assert importlib.import_module(fresh_module).answer() == "original"
